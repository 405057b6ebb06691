module github.com/kobe/groupconc/httpgc/browsertest

go 1.25.0

replace github.com/kobe/groupconc => ../..

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/kobe/groupconc v0.3.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
