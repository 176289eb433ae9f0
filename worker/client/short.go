package client

import (
	"context"

	"github.com/snowfleet/snowfleet/snowflake"
)

// The short form (snowflake.FormatShort: 13 characters of Crockford's
// base-32, sorting in ID order) is made here, from IDs taken as integers:
// the same requests, prefetch and slot checks as Next and NextN, and no
// string parsing on the way in.

// NextShort is Next in the short form.
func (c *Client) NextShort(ctx context.Context) (string, error) {
	id, err := c.Next(ctx)
	if err != nil {
		return "", err
	}
	return snowflake.FormatShort(id), nil
}

// NextNShort is NextN in the short form: n strings, ascending.
func (c *Client) NextNShort(ctx context.Context, n int) ([]string, error) {
	ids, err := c.NextN(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = snowflake.FormatShort(id)
	}
	return out, nil
}
