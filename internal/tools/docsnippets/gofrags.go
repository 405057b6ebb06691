package main

// The Go blocks: every fragment compiles in one package, and a whole
// program runs with its output compared.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

var imports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log",
	"http": "net/http", "time": "time", "os": "os", "atomic": "sync/atomic",
	"sync": "sync", "json": "encoding/json", "slog": "log/slog", "io": "io",
	"groupconc":  "github.com/kobe/groupconc",
	"adapt":      "github.com/kobe/groupconc/adapt",
	"httpgc":     "github.com/kobe/groupconc/httpgc",
	"httplimit":  "github.com/kobe/groupconc/httplimit",
	"promgc":     "github.com/kobe/groupconc/promgc",
	"otelgc":     "github.com/kobe/groupconc/otelgc",
	"redisgc":    "github.com/kobe/groupconc/redisgc",
	"grpcgc":     "github.com/kobe/groupconc/grpcgc",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"redis":      "github.com/redis/go-redis/v9",
	"grpc":       "google.golang.org/grpc",
	"codes":      "google.golang.org/grpc/codes",
	"status":     "google.golang.org/grpc/status",
	"metadata":   "google.golang.org/grpc/metadata",
	"insecure":   "google.golang.org/grpc/credentials/insecure",
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
		out, err := c.run(fdir, buildTime, "go", "build", "-gcflags=-e", ".")
		if err == nil {
			break
		}
		out = fmt.Sprintf("%v\n%s", err, out)
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
	if out, err := c.run(pdir, buildTime, "go", "build", "-o", "prog", "."); err != nil {
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
		"github.com/kobe/groupconc/grpcgc":  "grpcgc",
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
	// No go mod tidy here: with no code yet it would drop the requirements
	// above, and the builds would then take the newest version of each
	// adapter's library, not the one the adapter requires.
}

// run runs a command in dir with GOWORK off, and returns its combined
// output. Only in the temporary module may go change go.mod and go.sum.
// buildTime bounds a go command that builds or resolves modules. A loaded
// machine that downloads the adapters' modules first can take minutes.
const buildTime = 5 * time.Minute

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
