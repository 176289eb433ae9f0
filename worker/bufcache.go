package worker

import (
	"math/bits"
	"slices"
	"sync"
)

// bufCache keeps the buffers of closed connections, and the grown read
// buffers a connection gave back, for the next one. A storm of
// connections (thousands a second, each closed after one bad request), or
// a client that grows its read buffer to 128 KiB over and over, would
// otherwise allocate megabytes a second, and the garbage collector and
// the scavenger (which hands freed pages back to the kernel) would take
// their share of the CPU from everyone's requests. It holds at most
// bufCacheKeep buffers a size, about 4 MiB in all. A buffer from it is
// not zeroed: only what a read or a reply wrote into it is ever used.
type bufCache struct {
	mu   sync.Mutex
	free [bufClasses][][]byte
}

// bufClasses are the sizes kept: readBufSize (which is writeBufSize)
// doubled up to MaxFrame, the sizes a read buffer grows through.
const (
	bufClasses   = 6
	bufCacheKeep = 16
)

// bufClass is the class of a buffer of n bytes, -1 for a size not kept.
func bufClass(n int) int {
	if n < readBufSize || n%readBufSize != 0 {
		return -1
	}
	q := n / readBufSize
	if q&(q-1) != 0 {
		return -1
	}
	if k := bits.TrailingZeros(uint(q)); k < bufClasses {
		return k
	}
	return -1
}

// get is a buffer of n bytes, from the cache if it holds one.
func (b *bufCache) get(n int) []byte {
	if k := bufClass(n); k >= 0 {
		b.mu.Lock()
		if l := len(b.free[k]); l > 0 {
			buf := b.free[k][l-1]
			b.free[k][l-1] = nil
			b.free[k] = b.free[k][:l-1]
			b.mu.Unlock()
			return buf
		}
		b.mu.Unlock()
	}
	return make([]byte, n)
}

// grow is buf with room for n more bytes: buf itself when it has it, else
// its bytes in a buffer of the cache's smallest size that fits (buf goes
// back), or, past the largest, one allocated: a reply that is written
// and dropped again and again (outlimit.go) then costs no garbage.
func (b *bufCache) grow(buf []byte, n int) []byte {
	need := len(buf) + n
	if need <= cap(buf) {
		return buf
	}
	size := readBufSize
	for size < need && bufClass(2*size) >= 0 {
		size *= 2
	}
	if size < need {
		return slices.Grow(buf, n)
	}
	nb := append(b.get(size)[:0], buf...)
	b.put(buf)
	return nb
}

// put gives buf back; the caller no longer uses it.
func (b *bufCache) put(buf []byte) {
	buf = buf[:cap(buf)]
	k := bufClass(len(buf))
	if k < 0 {
		return
	}
	b.mu.Lock()
	if len(b.free[k]) < bufCacheKeep {
		b.free[k] = append(b.free[k], buf)
	}
	b.mu.Unlock()
}
