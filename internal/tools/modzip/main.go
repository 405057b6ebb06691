// Command modzip publishes modules of a source tree, at one version, as a
// file-based module proxy: the form a user's go command downloads them in
// (see "go help goproxy"), so that a build against it checks what a
// release would serve, before anything is tagged.
//
//	go run . -version v0.3.0 -out /tmp/proxy ../../.. ../../../promgc
//
// Each directory argument is a module root (it holds a go.mod). Its zip
// holds the files git tracks there and the untracked ones it does not
// ignore (the tree as it is, not as committed), less the files of nested
// modules, as golang.org/x/mod/zip builds it; outside a git work tree, every
// file of the directory. The proxy gets the module's list, .info, .mod and
// .zip files under -out.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to publish every module at, such as v0.3.0")
	out := flag.String("out", "", "the directory of the file-based proxy")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("modzip: ")
	if *version == "" || *out == "" || flag.NArg() == 0 {
		log.Fatal("usage: modzip -version vX.Y.Z -out DIR MODULE_DIR...")
	}
	for _, dir := range flag.Args() {
		if err := publish(dir, *version, *out); err != nil {
			log.Fatal(err)
		}
	}
}

// publish adds the module rooted at dir, at version, to the proxy in out.
func publish(dir, version, out string) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("%s: go.mod has no module line", dir)
	}
	m := module.Version{Path: path, Version: version}
	files, err := treeFiles(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	var z bytes.Buffer
	if err := zip.Create(&z, m, files); err != nil {
		return err
	}
	escPath, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	at := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		escVersion + ".info": info,
		escVersion + ".mod":  gomod,
		escVersion + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := addToList(filepath.Join(at, "list"), version); err != nil {
		return err
	}
	fmt.Printf("%s@%s: %d bytes\n", path, version, z.Len())
	return nil
}

// treeFiles returns the files of the module rooted at dir: what git tracks
// and what it would not ignore, or every file outside a git work tree.
func treeFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	listed, err := cmd.Output()
	if err != nil {
		return walkFiles(dir)
	}
	var files []zip.File
	for name := range strings.SplitSeq(strings.TrimSuffix(string(listed), "\x00"), "\x00") {
		f := file{root: dir, path: name}
		if _, err := f.Lstat(); errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the tree, not yet in the index
		}
		files = append(files, f)
	}
	return files, nil
}

// walkFiles returns every regular file under dir.
func walkFiles(dir string) ([]zip.File, error) {
	var files []zip.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, file{root: dir, path: filepath.ToSlash(rel)})
		return err
	})
	return files, err
}

// addToList adds version to the proxy's list of a module's versions.
func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// file is a file of the tree, named by its slash-separated path in the
// module.
type file struct{ root, path string }

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name()) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.name()) }
func (f file) name() string                 { return filepath.Join(f.root, filepath.FromSlash(f.path)) }
