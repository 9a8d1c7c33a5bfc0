// sessiondb's web UI: hand-written, no framework, no build step. Every
// page works without it; this file only adds behaviour: "show all" without
// leaving the page, the live transcript, and writes (requeue) sent as the
// API expects them. The server's Content-Security-Policy allows scripts
// from this origin only, so every handler is bound here, never in an
// attribute. Text from the server is put into the page with textContent,
// or as HTML the server rendered with its escaping templates, parsed in an
// inert <template> element.
"use strict";

(function () {
  // "show all": fetch a cut text whole and put it in place of the cut one.
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a.show-all");
    if (!a) return;
    ev.preventDefault();
    var box = a.closest(".text");
    var pre = box && box.querySelector("pre.body");
    if (!pre) return;
    a.textContent = "loading…";
    fetch(a.getAttribute("href"), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (text) {
      pre.textContent = text;
      var cut = a.closest(".cut");
      if (cut) cut.remove();
    }).catch(function (err) {
      a.textContent = "could not load the whole text (" + err.message + "): open it";
    });
  });

  // Expand or fold every tool call of a transcript at once.
  var expand = document.getElementById("expand-all");
  if (expand) {
    expand.hidden = false;
    expand.addEventListener("click", function () {
      var calls = document.querySelectorAll("details.call");
      var open = expand.dataset.open !== "true";
      calls.forEach(function (d) { d.open = open; });
      expand.dataset.open = String(open);
      expand.textContent = open ? "fold all tool calls" : "expand all tool calls";
    });
  }

  // posting counts the writes in flight: a refresh waits for them.
  var posting = 0;

  followTranscript();
  followRefresh();
  bindPostForms(document);

  // The live transcript: when the page ends at the newest message, follow
  // the session's event stream and append each new message as the server
  // renders it (GET /s/{id}/live?after=N).
  function followTranscript() {
    var box = document.getElementById("transcript");
    if (!box || box.dataset.live !== "true" || !window.EventSource) return;
    // The server writes the session's addresses (an id such as "." needs
    // its own form in a path: SessionPath).
    var base = box.dataset.page;
    var last = box.dataset.last || "0";
    var status = document.getElementById("live-status");
    var busy = false, again = false;

    var es = new EventSource(box.dataset.events + "?after=" + encodeURIComponent(last));
    es.addEventListener("open", function () { if (status) status.hidden = false; });
    es.addEventListener("error", function () { if (status) status.hidden = true; });
    es.addEventListener("message", pull);
    window.addEventListener("pagehide", function () { es.close(); });

    function pull() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(base + "/live?after=" + encodeURIComponent(last), { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        var more = r.headers.get("X-Has-More") === "1";
        var next = r.headers.get("X-Last-ID");
        return r.text().then(function (html) {
          insert(html);
          if (next) { last = next; box.dataset.last = next; }
          return more;
        });
      }).then(function (more) {
        busy = false;
        if (more || again) { again = false; pull(); }
      }).catch(function () {
        busy = false;
        again = false;
      });
    }

    function insert(html) {
      var nearEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
      var t = document.createElement("template");
      t.innerHTML = html;
      var added = null, n = 0;
      Array.prototype.slice.call(t.content.children).forEach(function (el) {
        if (document.getElementById(el.id)) return; // already shown
        n++;
        el.classList.add("fresh");
        var slot = el.dataset.resultFor && emptySlot(el.dataset.resultFor);
        if (slot) {
          // A result whose call is on the page goes inside the call.
          var h = document.createElement("h4");
          h.textContent = "Result";
          slot.appendChild(h);
          slot.appendChild(el);
          var state = slot.closest("details.call").querySelector(".call-state");
          if (state) {
            var lines = +el.dataset.lines || 0;
            state.textContent = "result" + (lines ? " · " + lines.toLocaleString("en-US") + (lines === 1 ? " line" : " lines") : "");
          }
        } else {
          box.appendChild(el);
        }
        added = el;
      });
      var count = document.getElementById("message-count");
      if (count && n) {
        var was = parseInt(count.textContent.replace(/,/g, ""), 10) || 0;
        count.textContent = (was + n).toLocaleString("en-US");
      }
      var empty = document.getElementById("no-messages");
      if (added && empty) empty.remove();
      if (added && nearEnd) added.scrollIntoView({ block: "end" });
    }

    function emptySlot(callID) {
      var slots = box.querySelectorAll(".call-result");
      for (var i = 0; i < slots.length; i++) {
        if (slots[i].dataset.slot === callID && !slots[i].children.length) return slots[i];
      }
      return null;
    }
  }

  // A page region with data-events (the mailboxes) follows that event
  // stream and, when something changes, is replaced by the same region of
  // the page fetched again. A stream starts with the whole state (a
  // "status" or "report" event), which the page already shows, unless it
  // is a reconnection; rows come as news from the seq the page gave.
  function followRefresh() {
    var box = document.querySelector("[data-events]");
    if (!box || !box.id || !window.EventSource) return;
    var es = new EventSource(box.dataset.events);
    var opened = 0, skip = false, timer = null;
    es.addEventListener("open", function () { opened++; skip = opened === 1; });
    ["report", "session", "status", "inbound", "outbound"].forEach(function (name) {
      es.addEventListener(name, function () {
        var first = skip;
        skip = false;
        if (first && (name === "status" || name === "report")) return;
        clearTimeout(timer);
        timer = setTimeout(refresh, 200);
      });
    });
    window.addEventListener("pagehide", function () { es.close(); });

    function refresh() {
      if (posting > 0) { timer = setTimeout(refresh, 500); return; }
      fetch(window.location.href, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById(box.id);
        if (!fresh || posting > 0) return;
        // What the reader opened and the answers to their writes stay.
        var open = {}, said = {};
        box.querySelectorAll("[data-row] details[open]").forEach(function (d) { open[d.closest("[data-row]").dataset.row] = true; });
        box.querySelectorAll("form[data-post]").forEach(function (f) {
          var r = f.querySelector("[data-result]");
          if (r && r.textContent) said[f.dataset.post + " " + f.dataset.body] = r;
        });
        box.replaceChildren.apply(box, Array.prototype.map.call(Array.prototype.slice.call(fresh.childNodes), function (n) {
          return document.adoptNode(n);
        }));
        box.querySelectorAll("[data-row]").forEach(function (row) {
          var d = row.querySelector("details");
          if (d && open[row.dataset.row]) d.open = true;
        });
        box.querySelectorAll("form[data-post]").forEach(function (f) {
          var old = said[f.dataset.post + " " + f.dataset.body], r = f.querySelector("[data-result]");
          if (old && r) r.replaceWith(old);
        });
        bindPostForms(box);
      }).catch(function () {});
    }
  }

  // Writes: a <form data-post="/api/v1/..."> is sent as the API expects
  // (a JSON body from its data-body attribute, or {}), from this origin
  // with the token's cookie; the answer is shown in the form's
  // [data-result] element, and the page reloads to show the new state.
  function bindPostForms(root) {
    root.querySelectorAll("form[data-post]").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var ask = form.dataset.confirm;
        if (ask && !window.confirm(ask)) return;
        var button = form.querySelector("button");
        var out = form.querySelector("[data-result]");
        if (!out) { out = document.createElement("span"); form.appendChild(out); }
        if (button) button.disabled = true;
        posting++;
        var held = true;
        function release() { if (held) { held = false; posting--; } }
        fetch(form.dataset.post, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json" },
          body: form.dataset.body || "{}"
        }).then(function (r) {
          release();
          return r.json().catch(function () { return {}; }).then(function (body) {
            if (!r.ok) {
              var msg = body && body.error ? body.error.message : "HTTP " + r.status;
              throw new Error(msg);
            }
            out.textContent = "done";
            window.location.reload();
          });
        }).catch(function (err) {
          release();
          if (button) button.disabled = false;
          out.textContent = "refused: " + err.message;
          out.classList.add("error");
        });
      });
    });
  }
})();

// A search hit's transcript marks, in the hit's message, the texts the
// search marked in its snippet (hl=, ui_hitmarks.go): the snippet's marks
// are what matched, CJK substrings included. Each match becomes a <mark>
// holding a piece of a text node, so the text stays text.
(function () {
  var target = document.querySelector("#transcript article.target");
  var words = new URLSearchParams(window.location.search).getAll("hl").filter(function (w) { return w !== ""; });
  if (!target || !words.length) return;
  words.sort(function (a, b) { return b.length - a.length; });
  var lower = words.map(function (w) { return w.toLowerCase(); });
  var nodes = [];
  var walker = document.createTreeWalker(target, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) nodes.push(walker.currentNode);
  nodes.forEach(function (node) {
    if (node.parentNode.closest("header, summary")) return;
    var text = node.nodeValue;
    var low = text.toLowerCase();
    if (low.length !== text.length) low = text; // a case change moved the offsets
    var frag = document.createDocumentFragment();
    var from = 0, i = 0, found = false;
    while (i < text.length) {
      var k = 0;
      while (k < lower.length && !low.startsWith(lower[k], i)) k++;
      if (k === lower.length) { i++; continue; }
      frag.appendChild(document.createTextNode(text.slice(from, i)));
      var mark = document.createElement("mark");
      mark.textContent = text.substr(i, lower[k].length);
      frag.appendChild(mark);
      i += lower[k].length;
      from = i;
      found = true;
    }
    if (!found) return;
    frag.appendChild(document.createTextNode(text.slice(from)));
    node.parentNode.replaceChild(frag, node);
  });
})();
