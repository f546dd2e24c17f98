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
	for n := 0; ; n++ {
		os.WriteFile(file, []byte(strconv.Itoa(n)), 0o644)
		time.Sleep(20 * time.Millisecond)
	}
}
