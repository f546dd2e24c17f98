package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/bridge/hostlib"
	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/luavm"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "load scripts as serve would and report their problems with file:line",
		ArgsUsage: "[DIR|FILE...] (default: scripts)",
		Before:    flagsFirst,
		Action:    check,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
	}
}

// checked is the report on one script.
type checked struct {
	File     string          `json:"file"`
	Path     string          `json:"path,omitempty"` // the route path, when it loads
	Tools    []string        `json:"tools"`
	Grants   *hostlib.Grants `json:"grants,omitempty"` // route.allow, when it loads
	Problems []luavm.Problem `json:"problems"`
	Warnings []luavm.Problem `json:"warnings"` // what works, but likely not as meant
}

// check runs luavm.Check on every script named, or on every server file of
// the folders named, and fails when any has a problem; warnings alone do
// not fail it.
func check(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		args = []string{"scripts"}
	}
	var report []checked
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such folder or file (luamcp check [DIR|FILE...]; the default folder is scripts)", arg)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			report = append(report, checkFile(arg, filepath.Dir(arg)))
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return err
		}
		owner := make(map[string]string)
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".lua") || strings.HasPrefix(name, ".") {
				continue
			}
			r := checkFile(filepath.Join(arg, name), arg)
			if r.Path != "" {
				if prev, taken := owner[r.Path]; taken {
					r.Problems = append(r.Problems, luavm.Problem{File: r.File,
						Message: fmt.Sprintf("route path %s is already mounted by %s", r.Path, prev)})
				} else {
					owner[r.Path] = r.File
				}
			}
			report = append(report, r)
		}
	}
	n, warnings := 0, 0
	for _, r := range report {
		n += len(r.Problems)
		warnings += len(r.Warnings)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"scripts": report, "problems": n, "warnings": warnings}); err != nil {
			return err
		}
	} else {
		printReport(c.App.Writer, report, n, warnings)
	}
	if n > 0 {
		// Not cli.Exit: urfave/cli would exit the process from inside Run.
		return fmt.Errorf("check found %d problem(s)", n)
	}
	return nil
}

// checkFile checks one script, naming files from the current folder.
func checkFile(file, dir string) checked {
	cfg := luavm.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), PoolSize: -1}
	r := checked{File: file, Tools: []string{}, Problems: []luavm.Problem{}, Warnings: []luavm.Problem{}}
	tools, problems := luavm.Check(file, cfg)
	if tools != nil {
		r.Tools = tools
	}
	for _, p := range problems {
		if !filepath.IsAbs(p.File) {
			p.File = filepath.Join(dir, filepath.FromSlash(p.File))
		}
		if p.Warning {
			r.Warnings = append(r.Warnings, p)
		} else {
			r.Problems = append(r.Problems, p)
		}
	}
	if len(r.Problems) == 0 || tools != nil {
		if s, err := luavm.Load(file, cfg); err == nil {
			r.Path = s.Options().Path
			r.Grants = s.Grants()
			s.Close()
			if err := host.CheckPath(r.Path); err != nil { // serve would refuse it
				r.Problems = append(r.Problems, luavm.Problem{File: r.File, Message: err.Error()})
			}
		}
	}
	return r
}

func printReport(w io.Writer, report []checked, n, warnings int) {
	for _, r := range report {
		for _, p := range r.Problems {
			fmt.Fprintln(w, p)
		}
		for _, p := range r.Warnings {
			fmt.Fprintln(w, p)
		}
		if len(r.Problems) == 0 {
			fmt.Fprintf(w, "ok %s  %s  tools: %s", r.File, r.Path, strings.Join(r.Tools, ", "))
			if !r.Grants.Empty() {
				fmt.Fprintf(w, "  %s", r.Grants)
			}
			fmt.Fprintln(w)
		}
	}
	switch n {
	case 0:
		if len(report) == 1 {
			fmt.Fprintf(w, "1 script, no problems")
		} else {
			fmt.Fprintf(w, "%d scripts, no problems", len(report))
		}
	case 1:
		fmt.Fprintf(w, "1 problem")
	default:
		fmt.Fprintf(w, "%d problems", n)
	}
	switch warnings {
	case 0:
	case 1:
		fmt.Fprintf(w, ", 1 warning")
	default:
		fmt.Fprintf(w, ", %d warnings", warnings)
	}
	fmt.Fprintln(w)
}
