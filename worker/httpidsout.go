package worker

import (
	"net/http"
	"strings"
)

// writeIDs answers first..first+n-1 as JSON, or one per line when the
// client's Accept names text/plain and not JSON. The answer is made and
// written a chunk (refillChunk) at a time, in a buffer of the server's
// cache: a client that does not read it holds one chunk of the worker's
// memory until WriteTimeout (and the kernel holds about the output limit
// unsent: tuneListener), not the whole answer, about 100 KB for 4,096 IDs.
func (s *Server) writeIDs(w http.ResponseWriter, r *http.Request, first int64, n int, many bool, form idForm) {
	accept := r.Header.Get("Accept")
	text := strings.Contains(accept, "text/plain") && !strings.Contains(accept, "application/json")
	b := s.bufs.get(refillChunk)[:0]
	defer func() { s.bufs.put(b) }()
	// A chunk is written once it is within an ID (at most 21 bytes with
	// its quotes and comma) of refillChunk.
	full := func() {
		if len(b) > refillChunk-32 {
			_, _ = w.Write(b)
			b = b[:0]
		}
	}
	if text {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for i := range int64(n) {
			full()
			b = appendIDText(b, first+i, form == formShort)
			b = append(b, '\n')
		}
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	quote := form != formInteger
	if many {
		b = append(b, `{"ids":[`...)
	} else {
		b = append(b, `{"id":`...)
	}
	for i := range int64(n) {
		full()
		if i > 0 {
			b = append(b, ',')
		}
		if quote {
			b = append(b, '"')
		}
		b = appendIDText(b, first+i, form == formShort)
		if quote {
			b = append(b, '"')
		}
	}
	if many {
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
}
