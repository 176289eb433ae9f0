// Package configerr is the error every snowfleet Config.Validate returns:
// the field, its value and what is wrong with it, so that a flag layer maps
// the field to its own flag name instead of reading the message.
package configerr

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a Config field that Validate rejected. Every snowfleet
// package's Validate returns one, so a caller can find the field with
// errors.As (a flag layer maps it to its own flag name) instead of reading
// the message.
type Error struct {
	// Field is the Config field's Go name, such as "Horizon".
	Field string
	// Value is the rejected value (for a list, the rejected entry), or nil
	// when there is none to show: the field is empty, or a secret.
	Value any
	// Reason says what is wrong with the value, such as "must be positive".
	Reason string
	// Err is the underlying cause, if any; Unwrap returns it.
	Err error
}

// Error names the field and its value: "config Horizon 1s must exceed Renew
// 1s", or "config Servers: empty" when there is no value to show.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config ")
	b.WriteString(e.Field)
	sep := ": "
	if e.Value != nil {
		switch v := e.Value.(type) {
		case string, []string:
			fmt.Fprintf(&b, " %q", v)
		default:
			fmt.Fprintf(&b, " %v", v)
		}
		sep = " "
	}
	if e.Reason != "" {
		b.WriteString(sep)
		b.WriteString(e.Reason)
		sep = ": "
	}
	if e.Err != nil {
		b.WriteString(sep)
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Renamed is err with its Field renamed by name, when err is an *Error: a
// Config that holds another's fields under other names (an embedded or
// delegated Config) reports them by its own. Other errors pass unchanged.
func Renamed(err error, name func(field string) string) error {
	var ce *Error
	if !errors.As(err, &ce) {
		return err
	}
	named := *ce
	named.Field = name(ce.Field)
	return &named
}
