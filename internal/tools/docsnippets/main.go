// Command docsnippets checks the code in README.md and docs/*.md.
//
// Every ```go block is compiled. A block that starts with "package" is a
// whole program: it is built and run, and if the next block is an
// ```output block, what it prints must match. Any other block is a
// fragment: it is compiled as the body of a function returning error, or
// at file level if it declares a func or a type, in one package with a
// prelude (prelude.go.txt) that declares the names fragments use (ctx, e,
// render, …). A variable a fragment declares and leaves unused gets a
// blank use, since a fragment shows a step, not a whole program.
//
// Shell commands (blocks with no language, sh or bash, whose lines start
// with go, cd or ./) are checked by what they are: go run of an example
// that stops by itself is run; go test and go list patterns must resolve;
// go get versions must exist (a tag, or main); scripts must exist. The
// rest are listed as not run, with the reason. A block preceded by
// <!-- docs-test: skip REASON --> is listed and not checked. Every
// relative link must name a file, and its #fragment a heading there.
//
// Run it from the repository root:
//
//	go run ./internal/tools/docsnippets
package main

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

//go:embed prelude.go.txt
var prelude string

// block is one fenced code block.
type block struct {
	file string
	line int // of the opening fence
	lang string
	text string
	skip string // the reason of a docs-test: skip comment before it
}

func main() {
	root := flag.String("root", ".", "the repository root")
	verbose := flag.Bool("v", false, "list every check")
	flag.Parse()
	start := time.Now()

	files, err := filepath.Glob(filepath.Join(*root, "docs", "*.md"))
	check(err)
	files = append([]string{filepath.Join(*root, "README.md")}, files...)
	var blocks []block
	for _, f := range files {
		data, err := os.ReadFile(f)
		check(err)
		rel, _ := filepath.Rel(*root, f)
		blocks = append(blocks, parse(rel, string(data))...)
	}

	abs, err := filepath.Abs(*root)
	check(err)
	c := &checker{root: abs, verbose: *verbose}
	c.tags = c.gitTags()
	c.goBlocks(blocks)
	c.shellBlocks(blocks)
	for _, f := range files {
		c.links(f)
	}

	fmt.Printf("docsnippets: %d go fragments compiled, %d programs run, %d commands run, %d commands checked, %d not run, %d links checked, in %v\n",
		c.fragments, c.programs, c.ran, c.checked, c.notRun, c.linksChecked, time.Since(start).Round(time.Second))
	if c.failed > 0 {
		fmt.Printf("docsnippets: %d failures\n", c.failed)
		os.Exit(1)
	}
}

var skipRE = regexp.MustCompile(`<!--\s*docs-test:\s*skip\s*(.*?)\s*-->`)

// parse returns the fenced blocks of a markdown file.
func parse(file, text string) []block {
	var out []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := block{file: file, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(l, "```"))}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if m := skipRE.FindStringSubmatch(lines[j]); m != nil {
				b.skip = m[1]
			}
			break
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

type checker struct {
	root    string
	verbose bool
	tags    map[string]bool

	fragments, programs, ran, checked, notRun, failed, linksChecked int
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#+ (.*)$`)
	slugDrop  = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// links checks that every relative link of a markdown file names a file
// that exists and, with a #fragment, a heading of that file.
func (c *checker) links(file string) {
	data, err := os.ReadFile(file)
	check(err)
	text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(data), "")
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		path, frag, _ := strings.Cut(target, "#")
		dest := file
		if path != "" {
			dest = filepath.Join(filepath.Dir(file), path)
		}
		c.linksChecked++
		body, err := os.ReadFile(dest)
		if err != nil {
			if info, serr := os.Stat(dest); serr == nil && info.IsDir() {
				continue
			}
			c.failed++
			fmt.Printf("FAIL %s: link %s: no file %s\n", file, target, dest)
			continue
		}
		if frag == "" {
			continue
		}
		found := false
		for _, h := range headingRE.FindAllStringSubmatch(string(body), -1) {
			slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.ReplaceAll(h[1], "`", "")), ""), " ", "-")
			if slug == frag {
				found = true
			}
		}
		if !found {
			c.failed++
			fmt.Printf("FAIL %s: link %s: no heading #%s in %s\n", file, target, frag, dest)
		}
	}
}

func (c *checker) fail(b block, format string, args ...any) {
	c.failed++
	fmt.Printf("FAIL %s:%d: %s\n", b.file, b.line, fmt.Sprintf(format, args...))
}

func (c *checker) note(b block, what, how string) {
	if c.verbose {
		fmt.Printf("%-28s %-60s %s\n", fmt.Sprintf("%s:%d", b.file, b.line), what, how)
	}
}

// imports maps a package name a fragment may use to its path.
var imports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log",
	"http": "net/http", "time": "time", "os": "os", "atomic": "sync/atomic",
	"sync": "sync", "json": "encoding/json", "slog": "log/slog",
	"groupconc":  "github.com/kobe/groupconc",
	"adapt":      "github.com/kobe/groupconc/adapt",
	"httpgc":     "github.com/kobe/groupconc/httpgc",
	"promgc":     "github.com/kobe/groupconc/promgc",
	"otelgc":     "github.com/kobe/groupconc/otelgc",
	"redisgc":    "github.com/kobe/groupconc/redisgc",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"redis":      "github.com/redis/go-redis/v9",
}

var commentRE = regexp.MustCompile(`//.*`)

var unusedRE = regexp.MustCompile(`^\./(frag\d+)\.go:\d+:\d+: declared and not used: (\w+)$`)

// goBlocks compiles every go block: fragments in one package, programs
// one by one.
func (c *checker) goBlocks(blocks []block) {
	dir, err := os.MkdirTemp("", "docsnippets")
	check(err)
	defer os.RemoveAll(dir)
	c.module(dir)

	type frag struct {
		b      block
		name   string
		body   string
		level  bool // file level
		unused []string
	}
	var frags []*frag
	for i, b := range blocks {
		if b.lang != "go" {
			continue
		}
		if b.skip != "" {
			c.notRun++
			c.note(b, "go block", "skipped: "+b.skip)
			continue
		}
		if strings.HasPrefix(b.text, "package ") {
			var want *string
			if i+1 < len(blocks) && blocks[i+1].lang == "output" {
				want = &blocks[i+1].text
			}
			c.program(dir, fmt.Sprintf("prog%d", i), b, want)
			continue
		}
		level := regexp.MustCompile(`(?m)^(func|type) `).MatchString(b.text)
		frags = append(frags, &frag{b: b, name: fmt.Sprintf("frag%d", len(frags)), body: b.text, level: level})
	}
	if len(frags) == 0 {
		return
	}
	fdir := filepath.Join(dir, "frags")
	check(os.MkdirAll(fdir, 0o755))
	check(os.WriteFile(filepath.Join(fdir, "prelude.go"), []byte(prelude), 0o644))
	byName := map[string]*frag{}
	write := func(f *frag) {
		var src strings.Builder
		src.WriteString("package frags\n\n")
		code := commentRE.ReplaceAllString(f.body, "")
		for name, path := range imports {
			if regexp.MustCompile(`\b` + name + `\.`).MatchString(code) {
				fmt.Fprintf(&src, "import %s %q\n", name, path)
			}
		}
		fmt.Fprintf(&src, "\n// %s:%d\n", f.b.file, f.b.line)
		if f.level {
			src.WriteString(f.body)
		} else {
			fmt.Fprintf(&src, "func %s() error {\n%s", f.name, f.body)
			for _, u := range f.unused {
				fmt.Fprintf(&src, "\t_ = %s\n", u)
			}
			src.WriteString("\treturn nil\n}\n")
		}
		check(os.WriteFile(filepath.Join(fdir, f.name+".go"), []byte(src.String()), 0o644))
	}
	for _, f := range frags {
		byName[f.name] = f
		write(f)
	}
	for range 20 {
		out, err := c.run(fdir, 2*time.Minute, "go", "build", "-gcflags=-e", ".")
		if err == nil {
			break
		}
		fixed := false
		var errs []string
		for _, l := range strings.Split(out, "\n") {
			if m := unusedRE.FindStringSubmatch(l); m != nil && !byName[m[1]].level {
				f := byName[m[1]]
				f.unused = append(f.unused, m[2])
				write(f)
				fixed = true
				continue
			}
			if strings.HasPrefix(l, "./") {
				errs = append(errs, l)
			}
		}
		if !fixed {
			for _, l := range errs {
				name := strings.SplitN(strings.TrimPrefix(l, "./"), ".go", 2)[0]
				if f, ok := byName[name]; ok {
					c.fail(f.b, "does not compile: %s", l)
				} else {
					fmt.Println("FAIL", l)
					c.failed++
				}
			}
			if len(errs) == 0 {
				fmt.Println("FAIL fragments:", out)
				c.failed++
			}
			break
		}
	}
	c.fragments += len(frags)
	for _, f := range frags {
		c.note(f.b, "go fragment", "compiled")
	}
}

// program builds and runs a whole program, and compares its output.
func (c *checker) program(dir, name string, b block, want *string) {
	pdir := filepath.Join(dir, name)
	check(os.MkdirAll(pdir, 0o755))
	check(os.WriteFile(filepath.Join(pdir, "main.go"), []byte(b.text), 0o644))
	if out, err := c.run(pdir, time.Minute, "go", "build", "-o", "prog", "."); err != nil {
		c.fail(b, "go build: %v\n%s", err, out)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pdir, "prog"))
	cmd.Dir = pdir
	stdout, err := cmd.Output()
	out := string(stdout)
	c.programs++
	switch {
	case err != nil:
		c.fail(b, "go run: %v\n%s", err, out)
	case want != nil && out != *want:
		c.fail(b, "prints:\n%s\nthe README says:\n%s", out, *want)
	default:
		c.note(b, "go program", "built, run, output compared")
	}
}

// module writes the go.mod of the temporary module: the repository's
// modules through replace directives, their checksums from their go.sum.
func (c *checker) module(dir string) {
	mods := map[string]string{
		"github.com/kobe/groupconc":         ".",
		"github.com/kobe/groupconc/promgc":  "promgc",
		"github.com/kobe/groupconc/otelgc":  "otelgc",
		"github.com/kobe/groupconc/redisgc": "redisgc",
	}
	var gomod, gosum bytes.Buffer
	gomod.WriteString("module docsnippets\n\ngo 1.25.0\n\n")
	var paths []string
	for p := range mods {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		d := filepath.Join(c.root, mods[p])
		fmt.Fprintf(&gomod, "require %s v0.0.0\nreplace %s => %s\n", p, p, d)
		sum, err := os.ReadFile(filepath.Join(d, "go.sum"))
		check(err)
		gosum.Write(sum)
	}
	check(os.WriteFile(filepath.Join(dir, "go.mod"), gomod.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(dir, "go.sum"), gosum.Bytes(), 0o644))
	// Resolve the adapters' requirements once, from the module cache.
	if out, err := c.run(dir, 2*time.Minute, "go", "mod", "tidy", "-e"); err != nil {
		fmt.Println("FAIL go mod tidy:", out)
		c.failed++
	}
}

// run runs a command in dir with GOWORK off, and returns its combined
// output. Only in the temporary module may go change go.mod and go.sum.
func (c *checker) run(dir string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if !strings.HasPrefix(dir, c.root) {
		cmd.Env = append(cmd.Env, "GOFLAGS=-mod=mod")
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

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
	"quickstart": true, "tenants": true, "backpressure": true, "shutdown": true,
	"fairshare": true, "hotswap": true, "tenantlimit": true, "batch": true, "priorities": true,
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
			if _, err := c.run(dir, time.Minute, "go", "vet", f[2]); err != nil {
				c.fail(b, "%s: go vet fails", line)
			}
			return
		}
		out, err := c.run(dir, time.Minute, "go", "run", f[2])
		if err != nil {
			c.fail(b, "%s: %v\n%s", line, err, out)
			return
		}
		c.ran++
		c.note(b, line, "run")
	case len(f) >= 2 && f[1] == "run" && len(f) == 3 && f[2] == ".":
		if _, err := c.run(dir, time.Minute, "go", "vet", "."); err != nil {
			c.fail(b, "%s: go vet fails", line)
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
		if out, err := c.run(dir, time.Minute, "go", append([]string{"list"}, pkgs...)...); err != nil {
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

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "docsnippets:", err)
		os.Exit(2)
	}
}
