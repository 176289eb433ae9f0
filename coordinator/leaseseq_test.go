package coordinator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/snowflake"
)

// zkSequences formats parent cversions as ZooKeeper's PrepRequestProcessor
// formats a sequential node's suffix, String.format(Locale.ENGLISH, "%010d",
// parentCVersion) with parentCVersion a Java int, by running that very
// expression in the JVM the test ZooKeeper runs on.
func zkSequences(t *testing.T, cversions []int64) []string {
	t.Helper()
	testenv.Require(t, "zookeeper")
	var args []string
	for _, v := range cversions {
		args = append(args, fmt.Sprint(v))
	}
	src := `import java.util.Locale;
public class Seq {
	public static void main(String[] a) {
		for (String s : a) {
			int parentCVersion = (int) Long.parseLong(s); // an int, as in DataNode's stat
			System.out.println(String.format(Locale.ENGLISH, "%010d", parentCVersion));
		}
	}
}
`
	f := filepath.Join(t.TempDir(), "Seq.java")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("java", append([]string{f}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("java %s: %v\n%s", f, err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cversions) {
		t.Fatalf("java printed %q for %d cversions", out, len(cversions))
	}
	return lines
}

// Past 2^31 creations under leases/ ZooKeeper's cversion, a Java int, wraps
// negative and the suffix reads "-2147483648": such names still parse, and
// the holder of a slot is its oldest node across the wrap (and across the
// second wrap at 2^32, back to "0000000000").
func TestLeaseNamesPastTwoToThe31(t *testing.T) {
	const max32 = 1<<31 - 1
	// The cversions a parent passes through, as Java ints overflow them.
	cv := []int64{41, max32 - 1, max32, max32 + 1, max32 + 2, 1<<32 - 2, 1<<32 - 1, 1 << 32, 1<<32 + 7}
	sfx := zkSequences(t, cv)
	t.Logf("ZooKeeper's suffixes: %q", sfx)
	if sfx[3] != "-2147483648" || sfx[6] != "-000000001" || sfx[7] != "0000000000" {
		t.Fatalf("java formatted %q; the test's premise about ZooKeeper's suffix is wrong", sfx)
	}
	slot := snowflake.Slot{Datacenter: 7, Machine: 13}
	names := make([]string, len(sfx))
	for i, s := range sfx {
		names[i] = fmt.Sprintf("_c_%032x-%s-%s", i, slot, s)
		s2, seq, err := zklayout.ParseLeaseName(names[i])
		if err != nil {
			t.Fatalf("cversion %d: %v", cv[i], err)
		}
		if want := cv[i] % (1 << 32); s2 != slot || seq != want {
			t.Errorf("%s: slot %s seq %d, want %s seq %d (the cversion as ZooKeeper means it)", names[i], s2, seq, slot, want)
		}
	}
	// Oldest first, by each pair of neighbours in creation order, and the
	// holder of a listing is the oldest whatever the listing's order.
	for i := 1; i < len(cv); i++ {
		_, a, _ := zklayout.ParseLeaseName(names[i-1])
		_, b, _ := zklayout.ParseLeaseName(names[i])
		if !zklayout.LeaseSeqBefore(a, b) || zklayout.LeaseSeqBefore(b, a) {
			t.Errorf("%s must come before %s", names[i-1], names[i])
		}
	}
	for _, win := range [][2]int{{1, 4}, {5, 8}, {2, 3}} { // live nodes span less than 2^31
		live := append([]string(nil), names[win[0]:win[1]+1]...)
		sort.Strings(live) // listing order is arbitrary; a name sort puts "-…" first
		if got := zklayout.Holders(live)[slot].Name; got != names[win[0]] {
			t.Errorf("holder of %q is %s, want the oldest %s", live, got, names[win[0]])
		}
	}
}

// The ordering agrees with czxid, ZooKeeper's own creation order, on nodes
// a real ZooKeeper made (sequential, protected, several slots interleaved).
func TestLeaseOrderAgreesWithCzxid(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	parent := "/order"
	if _, err := obs.Create(parent, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	slots := []snowflake.Slot{{Datacenter: 1, Machine: 2}, {Datacenter: 30, Machine: 31}, {Datacenter: 0, Machine: 0}}
	for i := 0; i < 30; i++ {
		s := slots[i%len(slots)]
		if _, err := obs.CreateProtectedEphemeralSequential(parent+"/"+s.String()+"-", nil, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 { // a gap in the sequence, as a deleted contender leaves
			p, err := obs.Create(parent+"/x-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			if err := obs.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	names, _, err := obs.Children(parent)
	if err != nil {
		t.Fatal(err)
	}
	czxid := map[string]int64{}
	var leases []string
	for _, n := range names {
		if _, _, err := zklayout.ParseLeaseName(n); err != nil {
			continue
		}
		_, st, err := obs.Exists(parent + "/" + n)
		if err != nil {
			t.Fatal(err)
		}
		czxid[n] = st.Czxid
		leases = append(leases, n)
	}
	if len(leases) != 30 {
		t.Fatalf("%d lease names parsed of %q", len(leases), names)
	}
	byCzxid := append([]string(nil), leases...)
	sort.Slice(byCzxid, func(i, j int) bool { return czxid[byCzxid[i]] < czxid[byCzxid[j]] })
	bySeq := append([]string(nil), leases...)
	sort.Slice(bySeq, func(i, j int) bool {
		_, a, _ := zklayout.ParseLeaseName(bySeq[i])
		_, b, _ := zklayout.ParseLeaseName(bySeq[j])
		return zklayout.LeaseSeqBefore(a, b)
	})
	for i := range byCzxid {
		if byCzxid[i] != bySeq[i] {
			t.Fatalf("order by sequence %q differs from order by czxid %q", bySeq, byCzxid)
		}
	}
	h := zklayout.Holders(leases)
	for _, s := range slots {
		for _, n := range byCzxid {
			if sl, _, _ := zklayout.ParseLeaseName(n); sl == s {
				if h[s].Name != n {
					t.Errorf("slot %s: holder %s, want the first created %s", s, h[s].Name, n)
				}
				break
			}
		}
	}
}
