package main

// The shell blocks: each command is run, or checked and listed.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func (c *checker) gitTags() map[string]bool {
	out, err := exec.Command("git", "-C", c.root, "tag").Output()
	check(err)
	tags := map[string]bool{}
	for _, t := range strings.Fields(string(out)) {
		tags[t] = true
	}
	return tags
}

// stops lists the examples that end by themselves, so a README command
// that runs one is run here.
var stops = map[string]bool{
	"quickstart": true, "tenants": true, "pertenant": true, "backpressure": true, "shutdown": true,
	"fairshare": true, "hotswap": true, "tenantlimit": true, "batch": true, "priorities": true,
	"httpserver": true, "httpclient": true,
}

// shellBlocks checks every shell command.
func (c *checker) shellBlocks(blocks []block) {
	for _, b := range blocks {
		if b.lang != "" && b.lang != "sh" && b.lang != "bash" && b.lang != "shell" {
			continue
		}
		text := strings.ReplaceAll(b.text, "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if !(strings.HasPrefix(line, "go ") || strings.HasPrefix(line, "cd ") || strings.HasPrefix(line, "./")) {
				continue // a diagram or output
			}
			if b.skip != "" {
				c.notRun++
				c.note(b, line, "skipped: "+b.skip)
				continue
			}
			c.command(b, line)
		}
	}
}

// command checks one command line.
func (c *checker) command(b block, line string) {
	cmdline := line
	if i := strings.Index(cmdline, " #"); i >= 0 {
		cmdline = strings.TrimSpace(cmdline[:i])
	}
	dir := c.root
	if strings.HasPrefix(cmdline, "cd ") {
		parts := strings.SplitN(strings.TrimPrefix(cmdline, "cd "), "&&", 2)
		dir = filepath.Join(c.root, strings.TrimSpace(parts[0]))
		if _, err := os.Stat(dir); err != nil {
			c.fail(b, "%s: no directory %s", line, parts[0])
			return
		}
		if len(parts) < 2 {
			c.checked++
			c.note(b, line, "directory exists")
			return
		}
		cmdline = strings.TrimSpace(parts[1])
	}
	f := strings.Fields(cmdline)
	switch {
	case strings.HasPrefix(f[0], "./"):
		info, err := os.Stat(filepath.Join(dir, f[0]))
		if err != nil || info.Mode()&0o111 == 0 {
			c.fail(b, "%s: no executable %s", line, f[0])
			return
		}
		c.checked++
		c.note(b, line, "script exists; not run (long): .ci/run runs the tests it drives")
	case len(f) >= 3 && f[1] == "run" && strings.HasPrefix(f[2], "./examples/") && len(f) == 3:
		name := strings.TrimPrefix(f[2], "./examples/")
		if !stops[name] {
			c.checked++
			c.note(b, line, "not run (runs until stopped); .ci/run runs it with -for")
			if out, err := c.run(dir, buildTime, "go", "vet", f[2]); err != nil {
				c.fail(b, "%s: go vet fails: %v\n%s", line, err, out)
			}
			return
		}
		out, err := c.run(dir, buildTime, "go", "run", f[2])
		if err != nil {
			c.fail(b, "%s: %v\n%s", line, err, out)
			return
		}
		c.ran++
		c.note(b, line, "run")
	case len(f) >= 2 && f[1] == "run" && len(f) == 3 && f[2] == ".":
		if out, err := c.run(dir, buildTime, "go", "vet", "."); err != nil {
			c.fail(b, "%s: go vet fails: %v\n%s", line, err, out)
			return
		}
		c.checked++
		c.note(b, line, "vetted; .ci/run runs it")
	case len(f) >= 2 && f[1] == "run" && len(f) > 3 && strings.HasPrefix(f[2], "./examples/"):
		c.checked++
		c.note(b, line, "not run (flags for a long run); .ci/run runs the example")
	case len(f) >= 2 && (f[1] == "test" || f[1] == "list"):
		var pkgs []string
		for i := 2; i < len(f); i++ {
			a := f[i]
			if a == "-run" || a == "-bench" || a == "-count" || a == "-timeout" || a == "-cpu" || a == "-shuffle" {
				i++
				continue
			}
			if a == "." || strings.HasPrefix(a, "./") {
				pkgs = append(pkgs, a)
			}
		}
		if out, err := c.run(dir, buildTime, "go", append([]string{"list"}, pkgs...)...); err != nil {
			c.fail(b, "%s: its packages do not resolve:\n%s", line, out)
			return
		}
		c.checked++
		c.note(b, line, "packages resolve; not run here (.ci/run runs the tests)")
	case len(f) >= 2 && f[1] == "get":
		for _, a := range f[2:] {
			at := strings.LastIndex(a, "@")
			if at < 0 {
				continue
			}
			v := a[at+1:]
			mod := a[:at]
			prefix := strings.TrimPrefix(strings.TrimPrefix(mod, "github.com/kobe/groupconc"), "/")
			tag := v
			if prefix != "" {
				tag = prefix + "/" + v
			}
			if v != "main" && v != "latest" && !c.tags[tag] {
				c.fail(b, "%s: no tag %s", line, tag)
				return
			}
		}
		c.checked++
		c.note(b, line, "versions exist (a tag, or main)")
	default:
		c.notRun++
		c.note(b, line, "not run: it changes the user's module")
	}
}
