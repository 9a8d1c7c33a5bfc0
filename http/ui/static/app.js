// sessiondb's web UI: hand-written, no framework, no build step. The page
// works without it; this file only adds behaviour. The server's
// Content-Security-Policy allows scripts from this origin only, so every
// handler is bound here, never in an attribute.
"use strict";
