package groupconc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// exemptFromExamples lists the exported functions and methods that need no
// Example of their own, each with the reason.
var exemptFromExamples = map[string]string{
	"TaskStatus.String":         "fmt calls it: every Example that prints a status shows it",
	"IsolationMode.String":      "fmt calls it: ExamplePolicyBuilder_Isolation prints one",
	"Priority.String":           "fmt calls it: ExamplePriority prints one",
	"RejectionPolicy.String":    "fmt calls it: ExamplePolicyBuilder_RejectionPolicy prints one",
	"PressureTrigger.String":    "fmt calls it: ExamplePolicyBuilder_PressureWarnings prints one",
	"RejectedError.Error":       "the error interface: ExampleRejectionPolicy_abort prints one",
	"RejectedError.Is":          "errors.Is calls it: ExampleRejectionPolicy_abort shows errors.Is(err, ErrRejected)",
	"PanicError.Error":          "the error interface: ExampleSubmit prints a panic's result",
	"PanicError.Unwrap":         "errors.Is and errors.As call it",
	"ListenerFuncs.OnSubmitted": "implements TaskLifecycleListener: ExampleListenerFuncs shows the field it calls",
	"ListenerFuncs.OnStarted":   "implements TaskLifecycleListener: ExampleListenerFuncs shows the field it calls",
	"ListenerFuncs.OnCompleted": "implements TaskLifecycleListener: ExampleListenerFuncs shows the field it calls",
	"ListenerFuncs.OnRejected":  "implements TaskLifecycleListener: ExampleListenerFuncs shows the field it calls",
}

// TestEveryExportedEntryPointHasAnExample lists the root package's exported
// functions and methods from its source and fails for one with no Example
// (ExampleF, ExampleT_M, or either with a _suffix) that is not exempt.
func TestEveryExportedEntryPointHasAnExample(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	examples := map[string]bool{}
	for _, de := range entries {
		name := de.Name()
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if test {
				if ex, ok := strings.CutPrefix(fd.Name.Name, "Example"); ok {
					examples[withoutSuffix(ex)] = true
				}
				continue
			}
			if !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				exported = append(exported, fd.Name.Name)
				continue
			}
			recv := receiverName(fd.Recv.List[0].Type)
			if ast.IsExported(recv) {
				exported = append(exported, recv+"."+fd.Name.Name)
			}
		}
	}
	sort.Strings(exported)
	if len(exported) < 50 {
		t.Fatalf("found %d exported functions and methods, want the package's (at least 50)", len(exported))
	}
	for _, name := range exported {
		if examples[strings.ReplaceAll(name, ".", "_")] {
			continue
		}
		if _, ok := exemptFromExamples[name]; ok {
			continue
		}
		t.Errorf("%s has no Example (Example%s) and is not in exemptFromExamples", name, strings.ReplaceAll(name, ".", "_"))
	}
	for name := range exemptFromExamples {
		if examples[strings.ReplaceAll(name, ".", "_")] {
			t.Errorf("%s has an Example: drop it from exemptFromExamples", name)
		}
	}
}

// withoutSuffix drops an Example's lower-case _suffix: "T_M_more" → "T_M".
func withoutSuffix(ex string) string {
	parts := strings.Split(ex, "_")
	if n := len(parts); n > 1 && unicode.IsLower(rune(parts[n-1][0])) {
		parts = parts[:n-1]
	}
	return strings.Join(parts, "_")
}

// receiverName returns the type name of a method's receiver.
func receiverName(x ast.Expr) string {
	switch t := x.(type) {
	case *ast.StarExpr:
		return receiverName(t.X)
	case *ast.IndexExpr:
		return receiverName(t.X)
	case *ast.IndexListExpr:
		return receiverName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
