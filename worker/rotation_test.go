package worker

import (
	"context"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// TestRotationClosesOldPasswords: a rotation that drops a password closes
// the connections authenticated with it (go-redis's pooled connection
// among them), and those that connected while no password was set; the
// connections of a password still in force, and those not yet
// authenticated, stay. Before, every authenticated connection lived on
// across a rotation, and go-redis kept issuing IDs on the old password.
func TestRotationClosesOldPasswords(t *testing.T) {
	zk := startZK(t)
	for _, goroutines := range []bool{false, true} {
		t.Run("goroutines="+strconv.FormatBool(goroutines), func(t *testing.T) {
			noEventLoop = goroutines
			defer func() { noEventLoop = false }()
			w := startWorker(t, zk.Addr(), true, nil)
			ctx := context.Background()
			const old, next = "old-password-0123456789", "new-password-0123456789"

			open := w.dial(t) // connected while no password is set
			open.send("NEXTID\r\n")
			open.expectPrefix(":")
			if n := w.srv.SetPasswords([][]byte{[]byte(old)}); n != 1 {
				t.Errorf("setting a password closed %d connections, want 1 (the one that needed none)", n)
			}
			open.expectClosed()

			oldConn := w.dial(t)
			oldConn.send("AUTH " + old + "\r\nNEXTID\r\n")
			oldConn.expect("+OK")
			oldConn.expectPrefix(":")
			oldClient := w.client(func(o *redis.Options) { o.Password, o.PoolSize = old, 1 })
			if id, err := oldClient.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
				t.Fatalf("go-redis with the old password: %d, %v", id, err)
			}

			// The rotation's first step: both in force, nothing closed.
			if n := w.srv.SetPasswords([][]byte{[]byte(old), []byte(next)}); n != 0 {
				t.Errorf("adding a password closed %d connections", n)
			}
			newConn := w.dial(t)
			newConn.send("AUTH default " + next + "\r\n")
			newConn.expect("+OK")
			waiting := w.dial(t) // not authenticated yet
			waiting.send("PING\r\n")
			waiting.expect("-NOAUTH Authentication required.")
			oldConn.send("NEXTID\r\n")
			oldConn.expectPrefix(":")

			// The second: the old password out.
			if n := w.srv.SetPasswords([][]byte{[]byte(next)}); n != 2 {
				t.Errorf("dropping the old password closed %d connections, want 2 (raw and go-redis)", n)
			}
			oldConn.expectClosed()
			if err := oldClient.Do(ctx, "NEXTID").Err(); err == nil {
				t.Fatal("go-redis with the old password still gets IDs after the rotation")
			}
			newConn.send("NEXTID\r\n")
			newConn.expectPrefix(":")
			waiting.send("AUTH " + next + "\r\nNEXTID\r\n")
			waiting.expect("+OK")
			waiting.expectPrefix(":")
			newClient := w.client(func(o *redis.Options) { o.Password = next })
			if id, err := newClient.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
				t.Fatalf("go-redis with the new password: %d, %v", id, err)
			}
			var m dto.Metric
			if err := w.srv.auth.revoked.Write(&m); err != nil || m.GetCounter().GetValue() != 3 {
				t.Errorf("snowflake_worker_auth_revoked_total = %v (%v), want 3", m.GetCounter().GetValue(), err)
			}
		})
	}
}
