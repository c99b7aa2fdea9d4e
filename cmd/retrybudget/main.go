// Command retrybudget is the operator tool for the retrybudget SDK.
//
// Usage:
//
//	retrybudget <command> [flags]
//
// Commands:
//
//	resolve   show what the action ledger decides for a request, and why
//	plan      show a retry policy's attempt schedule, worst case and outage amplification
//	ledger    list, show and resolve stuck actions in a Redis ledger
//	console   serve the operator console on a Redis ledger
//
// Run "retrybudget <command> -h" for a command's flags.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process exit status: 0 on
// success, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "resolve":
		return resolve(args[1:], stdout, stderr)
	case "plan":
		return planCmd(args[1:], stdout, stderr)
	case "ledger":
		return ledgerCmd(args[1:], stdout, stderr)
	case "console":
		return consoleCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "retrybudget: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: retrybudget <command> [flags]

commands:
  resolve   show what the action ledger decides for a request, and why
  plan      show a retry policy's attempt schedule, worst case and outage amplification
  ledger    list, show and resolve stuck actions in a Redis ledger (--url redis://...)
  console   serve the operator console on a Redis ledger (--url redis://... --addr 127.0.0.1:8080)

Run "retrybudget <command> -h" for a command's flags.
`)
}
