// Package layout lists where the bytes of a struct go, field by field and
// padding included, as a Markdown table with the size class the allocator
// rounds the struct up to. The layout tests of groupstate and of the
// benchmarks module print it. benchmarks/MEMORY.md quotes them, and Quoted
// checks that it does.
package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strings"
)

// Row is a field, or the padding after one.
type Row struct {
	Off, Size  uintptr
	Name, Type string
}

// Rows lists typ's fields from offset 0, with the padding between and
// after them. Fields whose type is a struct of a package whose path begins
// with within are listed field by field, with dotted names.
func Rows(typ reflect.Type, within string) []Row { return rows(typ, within, "", 0) }

func rows(typ reflect.Type, within, prefix string, base uintptr) []Row {
	var rs []Row
	end := base
	for i := range typ.NumField() {
		f := typ.Field(i)
		off := base + f.Offset
		if off > end {
			rs = append(rs, Row{Off: end, Size: off - end, Name: "(padding)"})
		}
		name := prefix + f.Name
		if f.Type.Kind() == reflect.Struct && strings.HasPrefix(f.Type.PkgPath(), within) && f.Type.NumField() > 0 {
			rs = append(rs, rows(f.Type, within, name+".", off)...)
		} else {
			rs = append(rs, Row{Off: off, Size: f.Type.Size(), Name: name, Type: ShortName(f.Type.String())})
		}
		end = off + f.Type.Size()
	}
	if last := base + typ.Size(); last > end {
		rs = append(rs, Row{Off: end, Size: last - end, Name: "(padding)"})
	}
	return rs
}

// Check reports an error if rows do not account for every byte of typ,
// each row starting where the one before it ends.
func Check(typ reflect.Type, rows []Row) error {
	var sum uintptr
	for i, r := range rows {
		if r.Off != sum {
			return fmt.Errorf("%s: row %d (%s) at offset %d, want %d", ShortName(typ.String()), i, r.Name, r.Off, sum)
		}
		sum += r.Size
	}
	if sum != typ.Size() {
		return fmt.Errorf("%s: rows add up to %d bytes, want %d", ShortName(typ.String()), sum, typ.Size())
	}
	return nil
}

// Table renders rows as a Markdown table headed by typ's size and size
// class.
func Table(typ reflect.Type, rows []Row) string {
	var b strings.Builder
	size := typ.Size()
	fmt.Fprintf(&b, "%s: %d bytes, size class %d\n\n", ShortName(typ.String()), size, SizeClass(size))
	b.WriteString("| offset | size | field | type |\n|---:|---:|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", r.Off, r.Size, r.Name, r.Type)
	}
	return b.String()
}

// Quoted reports an error unless the document at path quotes table
// verbatim. So a document's layout tables match the code. A missing
// document is no error. A module's zip, for one, holds no document of
// the repository.
func Quoted(path, table string) error {
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !strings.Contains(string(doc), table) {
		return fmt.Errorf("%s does not quote the table as it is now:\n\n%s", path, table)
	}
	return nil
}

// ShortName is a type's or function's name without package paths. Of
// each run of name and path characters it keeps what follows the last
// slash.
func ShortName(s string) string {
	var b strings.Builder
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isPathByte(s[i]) {
			continue
		}
		word := s[start:i]
		b.WriteString(word[strings.LastIndexByte(word, '/')+1:])
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	return b.String()
}

func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' ||
		'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// sizeClasses are the Go allocator's small size classes, up to 1 KiB.
var sizeClasses = []uintptr{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768,
	896, 1024,
}

// SizeClass returns the bytes the allocator hands out for an object of
// size bytes (0 beyond the table).
func SizeClass(size uintptr) uintptr {
	for _, c := range sizeClasses {
		if size <= c {
			return c
		}
	}
	return 0
}
