package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// haproxyConfig is the HAProxy configuration the README shows (verbatim)
// for a three-node cluster.
var haproxyConfig = filepath.Join("..", "examples", "cluster", "haproxy.cfg")

// startHAProxy runs haproxy with haproxyConfig in front of nodes and returns
// the address it listens on.
func startHAProxy(t *testing.T, nodes []*testNode) string {
	t.Helper()
	listen := freeAddr(t)
	cmd := exec.Command(findProxy(t, "haproxy"), "-db", "-f", haproxyConfig)
	cmd.Env = append(os.Environ(), "LISTEN="+listen,
		"NODE1="+nodes[0].Addr(), "NODE2="+nodes[1].Addr(), "NODE3="+nodes[2].Addr())
	runProxy(t, "haproxy", cmd, listen)
	return listen
}

// TestClusterHAProxy runs HAProxy with the README's configuration in front of
// three nodes: it learns each session's node from the Mcp-Session-Id of the
// initialize answer, so every request of a session lands on its owner and
// no node forwards one.
func TestClusterHAProxy(t *testing.T) {
	inReadme(t, haproxyConfig)

	nodes, _, _, _ := startClusterNATS(t)
	addr := startHAProxy(t, nodes)
	owners := map[string]bool{}
	for range 3 {
		c := connectGo(t, "http://"+addr+"/mcp/session", nil, latestVersion)
		c.watch.wait(t) // the GET stream, through HAProxy
		owners[owner(t, nodes, c.ID()).id] = true
		for i := 1; i <= 4; i++ {
			c.wantText(t, "count", nil, string(rune('0'+i)))
		}
		if err := c.Close(); err != nil { // DELETE, through HAProxy
			t.Fatal(err)
		}
	}
	// Round robin placed the three initializes on different nodes; had the
	// table not learnt the sessions, later requests would have been spread
	// too, and forwarded.
	if len(owners) < 2 {
		t.Errorf("the sessions were all created on %v: HAProxy did not balance", owners)
	}
	for _, n := range nodes {
		if f := n.forwarded.Load(); f != 0 {
			t.Errorf("node %s was forwarded %d requests: HAProxy sent a session's requests to another node", n.id, f)
		}
	}
	var direct []string
	for _, n := range nodes {
		direct = append(direct, n.id+"="+strconv.FormatInt(n.direct.Load(), 10))
	}
	t.Logf("requests per node: %s", strings.Join(direct, " "))
}
