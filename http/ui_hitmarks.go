package http

import (
	"net/url"
	"strconv"
)

// At most hitMarksMax distinct matched texts, each at most hitMarkMax
// bytes, go from a search hit to its transcript: enough for a query's
// words, and the link stays short.
const (
	hitMarksMax = 8
	hitMarkMax  = 100
)

// hitURL links a search hit to its message in its transcript, naming the
// texts its snippet marked (hl=), which app.js marks in that message: the
// snippet's marks are what the search matched, CJK substrings included,
// so the page needs no tokenizer of its own.
func hitURL(sessionID string, id int64, snippet []segment) string {
	q := url.Values{"at": {strconv.FormatInt(id, 10)}}
	seen := map[string]bool{}
	for _, s := range snippet {
		if !s.Mark || s.Text == "" || len(s.Text) > hitMarkMax || seen[s.Text] || len(seen) == hitMarksMax {
			continue
		}
		seen[s.Text] = true
		q.Add("hl", s.Text)
	}
	return sessionURL(sessionID) + "?" + q.Encode() + "#m" + strconv.FormatInt(id, 10)
}
