//go:build mutant

package worker

import "github.com/snowfleet/snowfleet/worker/resp"

// appendDupBatch is the dupbatch mutant's NEXTIDS reply: n IDs of which the
// last repeats the one before it (first, ..., first+n-2, first+n-2).
func appendDupBatch(b []byte, first int64, n int, str bool) []byte {
	b = resp.AppendArrayHeader(b, n)
	if str {
		b = resp.AppendBulkIntRun(b, first, n-1)
		return resp.AppendBulkInt(b, first+int64(n)-2)
	}
	b = resp.AppendIntRun(b, first, n-1)
	return resp.AppendInt(b, first+int64(n)-2)
}
