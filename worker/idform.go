package worker

import (
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// idForm is how NEXTID and NEXTIDS write IDs: a request's own format word,
// or the connection's IDFORMAT.
type idForm uint8

const (
	// formInteger: RESP integers, the default.
	formInteger idForm = iota
	// formString: decimal bulk strings, for clients whose numbers hold 53
	// bits (JavaScript).
	formString
	// formShort: the 13-character short form (snowflake.AppendShort) as
	// bulk strings, which sort in ID order.
	formShort
)

// String is the form's word, as IDFORMAT answers it.
func (f idForm) String() string {
	switch f {
	case formString:
		return "STRING"
	case formShort:
		return "SHORT"
	}
	return "INTEGER"
}

// parseIDForm reads a format word, any case.
func parseIDForm(b []byte) (idForm, bool) {
	switch {
	case equalFold(b, "integer"):
		return formInteger, true
	case equalFold(b, "string"):
		return formString, true
	case equalFold(b, "short"):
		return formShort, true
	}
	return 0, false
}

// appendShortIDs appends first .. first+n-1 in the short form as bulk
// strings: a bare one (NEXTID), or an array of n (NEXTIDS).
func appendShortIDs(dst []byte, first int64, n int, array bool) []byte {
	if array {
		dst = resp.AppendArrayHeader(dst, n)
	}
	for i := range int64(n) {
		dst = append(dst, "$13\r\n"...)
		dst = snowflake.AppendShort(dst, first+i)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
