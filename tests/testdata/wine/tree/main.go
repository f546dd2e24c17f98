// Command tree is the program the Windows test (windows_test.go) lets a
// script run with exec.run: "tree parent FILE" starts "tree child FILE" and
// waits for it; the child writes a counter to FILE every 20 ms, for ever.
// That the counter stops once the call ended shows the grandchild was
// killed with the child.
package main

import (
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		os.Exit(2)
	}
	file := os.Args[2]
	if os.Args[1] == "parent" {
		child := exec.Command(os.Args[0], "child", file)
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		child.Wait()
		return
	}
	// Each count is written whole to a side file, then renamed over FILE:
	// the test never reads FILE truncated, even when the child is killed
	// between a truncation and its write (a slow machine made that an empty
	// file, read as "never ran").
	tmp := file + ".tmp"
	for n := 0; ; n++ {
		if os.WriteFile(tmp, []byte(strconv.Itoa(n)), 0o644) == nil {
			os.Rename(tmp, file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
