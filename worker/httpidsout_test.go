package worker

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// chunkRecorder records the size of each Write.
type chunkRecorder struct {
	*httptest.ResponseRecorder
	writes []int
}

func (c *chunkRecorder) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return c.ResponseRecorder.Write(p)
}

// TestWriteIDsChunks: 4,096 IDs over HTTP, in every form, are written a
// chunk at a time, never the whole answer (about 100 KB) at once, so a
// client that does not read holds one chunk of the worker's memory; and
// the chunks make the answer: 4,096 contiguous IDs.
func TestWriteIDsChunks(t *testing.T) {
	t.Parallel()
	s := &Server{}
	const first = 2128375127575052288
	for _, accept := range []string{"", "text/plain"} {
		for _, form := range []idForm{formString, formInteger, formShort} {
			rec := &chunkRecorder{ResponseRecorder: httptest.NewRecorder()}
			r := httptest.NewRequest(http.MethodGet, "/ids?count=4096", nil)
			r.Header.Set("Accept", accept)
			s.writeIDs(rec, r, first, 4096, true, form)
			if len(rec.writes) < 2 || max(rec.writes[0], rec.writes[len(rec.writes)-1]) > refillChunk {
				t.Errorf("accept %q, %v: writes of %v bytes, want chunks of at most %d", accept, form, rec.writes, refillChunk)
			}
			body := rec.Body.Bytes()
			var ids []string
			if accept == "text/plain" {
				ids = strings.Fields(string(body))
			} else if form == formInteger {
				var v struct{ IDs []json.Number }
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("%v: %v", form, err)
				}
				for _, n := range v.IDs {
					ids = append(ids, n.String())
				}
			} else {
				var v struct{ IDs []string }
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("%v: %v", form, err)
				}
				ids = v.IDs
			}
			if len(ids) != 4096 {
				t.Fatalf("accept %q, %v: %d IDs", accept, form, len(ids))
			}
			for i, id := range ids {
				want := appendIDText(nil, first+int64(i), form == formShort)
				if !bytes.Equal([]byte(id), want) {
					t.Fatalf("accept %q, %v: ID %d is %q, want %q", accept, form, i, id, want)
				}
			}
		}
	}
}
