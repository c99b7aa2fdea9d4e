// Package browsertest drives the operator console (package console) in a
// headless Chromium through chromedp. It is a module of its own so that
// the root module never depends on a browser driver. It has no code of
// its own: only tests.
package browsertest
