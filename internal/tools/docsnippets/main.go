// Command docsnippets checks the code in README.md and docs/*.md, and the
// links of every README.
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
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	// The nested modules' READMEs show their API in outline, which does
	// not compile alone: only their links are checked.
	links := files
	for _, pattern := range []string{"*/README.md", "examples/*/README.md"} {
		nested, err := filepath.Glob(filepath.Join(*root, pattern))
		check(err)
		for _, f := range nested {
			if !slices.Contains(links, f) {
				links = append(links, f)
			}
		}
	}
	for _, f := range links {
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
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "docsnippets:", err)
		os.Exit(2)
	}
}
