package snowflake

import (
	"errors"
	"fmt"
	"strconv"
)

// The short form of an ID is Crockford's base-32, fixed at ShortLen
// characters, most significant first, upper case: 1724551110457221119 is
// "1FVPP347WXQZZ". Its alphabet, ShortAlphabet, is in ASCII order, so at a
// fixed width the strings sort byte by byte (a database's text index,
// sort(1)) in the order of the IDs.
//
// Base-32 rather than base-62 (two characters shorter): a base-62 form
// differs only in case from others, and case-insensitive collations (the
// default in MySQL and SQL Server), case-insensitive file systems and
// people reading IDs aloud would merge or misorder them; Crockford's
// alphabet has no letter case to lose and no I, L, O or U to misread. It is
// ULID's alphabet, and encoding is shifts, no division.
const (
	// ShortAlphabet is the short form's digits 0..31, in ASCII order.
	ShortAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	// ShortLen is the short form's width: 13 characters carry 65 bits, so
	// the first is 0..7.
	ShortLen = 13
)

// ErrShortForm is matched (errors.Is) by every error of ParseShort.
var ErrShortForm = errors.New("not a short-form ID")

// shortDigit maps a byte to its value in the short form, -1 for none.
// Decoding is Crockford's: either case, and I, L read as 1 and O as 0, the
// letters a person copying an ID by hand mistakes for those digits.
var shortDigit = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i := 0; i < len(ShortAlphabet); i++ {
		c := ShortAlphabet[i]
		d[c] = int8(i)
		if 'A' <= c && c <= 'Z' {
			d[c+'a'-'A'] = int8(i)
		}
	}
	for _, c := range "iIlL" {
		d[c] = 1
	}
	d['o'], d['O'] = 0, 0
	return d
}()

// AppendShort appends the short form of id (>= 0) to dst.
func AppendShort(dst []byte, id int64) []byte {
	var b [ShortLen]byte
	u := uint64(id)
	for i := ShortLen - 1; i >= 0; i-- {
		b[i] = ShortAlphabet[u&31]
		u >>= 5
	}
	return append(dst, b[:]...)
}

// FormatShort is the short form of id (>= 0).
func FormatShort(id int64) string { return string(AppendShort(nil, id)) }

// ParseShort reads a short-form ID: exactly ShortLen characters of
// ShortAlphabet, in either case (I and L read as 1, O as 0).
func ParseShort(s string) (int64, error) {
	if len(s) != ShortLen {
		return 0, fmt.Errorf("%w: %q has %d characters, want %d", ErrShortForm, s, len(s), ShortLen)
	}
	var u uint64
	for i := 0; i < ShortLen; i++ {
		d := shortDigit[s[i]]
		if d < 0 {
			return 0, fmt.Errorf("%w: %q has %q at position %d, outside the alphabet %s", ErrShortForm, s, s[i], i+1, ShortAlphabet)
		}
		u = u<<5 | uint64(d)
	}
	if shortDigit[s[0]] > 7 {
		return 0, fmt.Errorf("%w: %q is above the largest ID %s (%d)", ErrShortForm, s, FormatShort(1<<63-1), int64(1<<63-1))
	}
	return int64(u), nil
}

// ParseID reads an ID in any of its text forms: ShortLen characters are the
// short form, anything else a decimal integer. (A decimal ID of exactly 13
// digits, one made in the first 40 minutes after Epoch, is read as decimal
// when written with a leading zero.)
func ParseID(s string) (int64, error) {
	if len(s) == ShortLen {
		return ParseShort(s)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("id %q is neither a decimal integer in 0..%d nor a %d-character short form", s, int64(1<<63-1), ShortLen)
	}
	return id, nil
}
