package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

func newCommand() *cli.Command {
	return &cli.Command{
		Name:      "new",
		Usage:     "write a commented starter script",
		ArgsUsage: "NAME",
		Before:    flagsFirst,
		Action:    newScript,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: "scripts", Usage: "folder to write NAME.lua in"},
			&cli.StringFlag{Name: "template", Usage: "a starter that reaches the world: http, fs or exec (default: a plain tool)"},
		},
	}
}

// scriptName is what a new script may be called: its file name is its
// default route, /mcp/NAME.
var scriptName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// newScript writes DIR/NAME.lua from the chosen template (and the folders it
// is granted); it never overwrites a file.
func newScript(c *cli.Context) error {
	switch c.NArg() {
	case 0:
		return fmt.Errorf("usage: luamcp new [--dir scripts] [--template http|fs|exec] NAME")
	case 1:
	default:
		return fmt.Errorf("new takes one NAME, not %q", c.Args().Slice())
	}
	name := strings.TrimSuffix(c.Args().First(), ".lua")
	if !scriptName.MatchString(name) {
		return fmt.Errorf("script name %q: use letters, digits, _ and - (it becomes the route /mcp/%s)", name, name)
	}
	tmpl, ok := templates[c.String("template")]
	if !ok {
		return fmt.Errorf("--template %q: want http, fs or exec", c.String("template"))
	}
	dir := c.String("dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, name+".lua")
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists", file)
	}
	if err != nil {
		return err
	}
	// The commands in the script's header run from where new ran.
	src := strings.NewReplacer("SCRIPT", file, "FOLDER", dir, "NAME", name).Replace(tmpl.source)
	_, err = f.WriteString(src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "wrote %s\n", file)
	for _, folder := range tmpl.folders {
		if err := os.MkdirAll(filepath.Join(dir, folder), 0o755); err != nil {
			return err
		}
		fmt.Fprintf(w, "made  %s (the script may write there)\n", filepath.Join(dir, folder))
	}
	fmt.Fprintf(w, "try it:  luamcp call %s %s\n", file, tmpl.try)
	fmt.Fprintf(w, "serve:   luamcp serve %s   (edits reload live)\n", dir)
	return nil
}

// starter is the script `luamcp new` writes; NAME, SCRIPT (its path) and
// FOLDER (its folder) are replaced.
const starter = `-- NAME: an MCP server written in Lua, served by luamcp.
--
--   luamcp call SCRIPT greet '{"name":"you"}'
--       run one tool, no client needed
--   luamcp check FOLDER
--       report problems with file:line
--   luamcp serve FOLDER
--       serve it at /mcp/NAME; saving reloads it
--
-- The full contract is in docs/script-api.md; types/ has editor stubs.

local mcp = require("mcp")

---@type luamcp.Server
return {
  -- Route options (all optional). Session mode keeps state between calls;
  -- validate_arguments checks each call's arguments against the tool's
  -- input_schema, so handle_tool only sees arguments that fit it.
  route = { sessions = true, validate_arguments = true },

  -- Runs once per session. Returns server info, capabilities and the
  -- initial state. params is {} when luamcp lists the tools at start, under
  -- "luamcp check" and for 2026-07-28 clients, so treat params.clientInfo
  -- as optional.
  init = function(params)
    return { name = "NAME", version = "0.1.0" }, { tools = {} }, { greeted = 0 }
  end,

  -- The tools this server offers. input_schema is a JSON Schema object.
  tools = function(state)
    return {
      {
        name = "greet",
        description = "Say hello to someone",
        input_schema = {
          type = "object",
          properties = { name = { type = "string", description = "who to greet" } },
          required = { "name" },
        },
      },
    }
  end,

  -- Runs a tool. Return a string (one text block) or { content = {...} };
  -- return nil, "message" for an error the model should see; error() is a
  -- crash: the client gets "Internal error", the log gets file:line.
  handle_tool = function(name, args, ctx, state)
    if name == "greet" then
      state.greeted = state.greeted + 1
      mcp.log(ctx, "info", { greeted = state.greeted })
      return "Hello, " .. args.name .. "! (greeting #" .. state.greeted .. ")"
    end
    return nil, "unknown tool " .. name
  end,

  -- Runs when a session ends: "normal" (DELETE, idle, script removed) or
  -- "shutdown" (the server stops).
  terminate = function(reason, state) end,
}
`
