package deploy_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// The image build refuses an unchecked archive (#39 item 4): with no
// keyring, build-images.sh stops before debootstrap runs, naming the
// keyring and the package that holds it, instead of debootstrap's warning
// and an unchecked download; the debootstrap it runs forces the signature
// check with that keyring.
func TestImageBuildRefusesUncheckedArchive(t *testing.T) {
	testenv.Require(t, "docker")
	if os.Getuid() != 0 {
		t.Skip("debootstrap needs root: the build refuses earlier without it")
	}
	cmd := exec.Command("./build-images.sh", "zookeeper")
	cmd.Env = append(os.Environ(), "DEBIAN_KEYRING=/nonexistent/keyring.gpg", "SNOWFLEET_CACHE="+t.TempDir(),
		"ZK_BASE_IMAGE=snowfleet/zookeeper-base:keyring-test-none", "ZK_IMAGE=snowfleet/zookeeper:keyring-test")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the archive keyring /nonexistent/keyring.gpg is missing") ||
		!strings.Contains(string(out), "apt-get install -y debian-archive-keyring") || strings.Contains(string(out), "debootstrap bookworm into") {
		t.Fatalf("build-images.sh zookeeper without a keyring: %v\n%s\nwant a refusal naming the keyring and its package, before debootstrap", err, out)
	}
	script, err := os.ReadFile("build-images.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `debootstrap --variant=minbase --force-check-gpg --keyring="$DEBIAN_KEYRING"`) {
		t.Error("build-images.sh runs debootstrap without --force-check-gpg --keyring")
	}
}
