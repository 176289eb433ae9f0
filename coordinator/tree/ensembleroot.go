package tree

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// ErrInsecureClose: CloseEnsembleRoot was asked with the insecure scheme,
// which has no operator to give / to.
var ErrInsecureClose = errors.New("closing ZooKeeper's / needs the operator's credentials")

// CloseEnsembleRoot gives ZooKeeper's / the root's ACL (the operator's
// cdrwa, the world's r), so that nobody else makes a znode at the top of
// the ensemble: nobody squats a fleet's root, or the path to it, before
// init makes it. ZooKeeper ships / as world:anyone:cdrwa. For an ensemble
// that the fleet has to itself (the shipped deployments); an operator of a
// shared ensemble decides for himself. Only / changes (not /zookeeper, nor
// anything under /). changed is false when / had that ACL already.
func CloseEnsembleRoot(conn *zk.Conn, scheme FleetACL) (changed bool, err error) {
	if scheme.Insecure() {
		return false, ErrInsecureClose
	}
	have, st, err := conn.GetACL("/")
	if err != nil {
		return false, fmt.Errorf("read the ACL of /: %w", err)
	}
	want := scheme.Root()
	if SameACL(have, want) {
		return false, nil
	}
	if _, err := conn.SetACL("/", want, st.Aversion); err != nil {
		return false, fmt.Errorf("set the ACL of / to %s (it was %s): %w", FormatACL(want), FormatACL(have), err)
	}
	return true, nil
}
