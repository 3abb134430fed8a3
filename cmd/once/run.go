package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/stagedoor/once/backends/redisstore"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// exitRequest is how kong's Exit (after --help) unwinds out of Parse
// without ending the process, so that run stays callable in-process.
type exitRequest struct{ code int }

// run parses args, runs the selected command and returns the exit status.
// Everything it prints goes to stdout (results) or stderr (errors).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	var c cli
	defer func() {
		if r := recover(); r != nil {
			req, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = req.code
			if code != exitOK {
				code = exitUsage
			}
		}
	}()
	parser, err := kong.New(&c,
		kong.Name("once"),
		kong.Description("Operate the records of github.com/stagedoor/once in PostgreSQL, MariaDB/MySQL, SQLite or Redis."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintf(stderr, "once: %v\n", err)
		return exitFailure
	}
	for i, a := range args {
		// The parser would turn invalid bytes into U+FFFD, and a scope or
		// key would silently become another one.
		if !utf8.ValidString(a) {
			return report(stderr, usagef("argument %d is not valid UTF-8", i+1))
		}
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		return report(stderr, usage(err))
	}
	c.given = map[string]bool{}
	for _, f := range kctx.Flags() {
		if f.Set {
			c.given[f.Name] = true
		}
	}
	return report(stderr, kctx.Run(&env{ctx: ctx, stdout: stdout, stderr: stderr, cli: &c}))
}

// report prints err, if any, and returns its exit status.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	msg := err.Error()
	var re *redisstore.Error
	if errors.As(err, &re) {
		msg = redisMessage(re)
	}
	if !strings.HasPrefix(msg, "once") { // the core's and the backends' errors name themselves
		msg = "once: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var u *usageError
	if errors.As(err, &u) {
		fmt.Fprintln(stderr, "Run 'once --help' for usage.")
		return exitUsage
	}
	return exitFailure
}

// redisMessage is a Redis store error as the CLI prints it: its operation,
// kind and Reason, as PostgreSQL's errors are printed, never its Detail (the
// driver's or server's raw text, which can quote an address, a URL with
// its password, or a command's arguments). A server reply's error code
// (NOAUTH, WRONGPASS, NOPERM, ...) is kept: it names no data.
func redisMessage(e *redisstore.Error) string {
	msg := (&redisstore.Error{Op: e.Op, Kind: e.Kind}).Error()
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if errors.Is(e.Kind, redisstore.ErrServer) {
		code, _, _ := strings.Cut(e.Detail, " ")
		if code != "" && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
			msg += " (the server answered " + code + ")"
		}
	}
	return msg
}

// usageError is an error of the command line (flags, arguments, scope or
// key), or a missing --yes: exit status 2, nothing was written to the
// store (resolve reads the key before it refuses a live pending claim).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage marks err as a usage error.
func usage(err error) error { return &usageError{err} }

// usagef is a usage error with a formatted message.
func usagef(format string, args ...any) error { return usage(fmt.Errorf(format, args...)) }
