package luavm

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSourceByteOrderMark: a script and a module saved by a Windows editor,
// with a UTF-8 byte order mark and CRLF line ends, load.
func TestSourceByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"bom.lua": "\xef\xbb\xbf-- saved by Notepad\r\nlocal util = require(\"util\")\r\nreturn {\r\n" +
			"  init = function() return { name = util.name, version = \"1\" }, { tools = {} }, {} end,\r\n" +
			"  tools = {},\r\n  handle_tool = function() end,\r\n}\r\n",
		"util.lua": "\xef\xbb\xbfreturn { name = \"bom\" }\r\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logger, _ := newLogger()
	s, err := Load(filepath.Join(dir, "bom.lua"), Config{Dir: dir, Logger: logger, PoolSize: -1})
	if err != nil {
		t.Fatalf("a script with a byte order mark: %v", err)
	}
	s.Close()
}
