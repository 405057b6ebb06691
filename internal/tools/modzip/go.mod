module github.com/kobe/groupconc/internal/tools/modzip

go 1.25.0

require golang.org/x/mod v0.40.0
