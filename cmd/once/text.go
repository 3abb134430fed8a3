package main

import (
	"strconv"
	"strings"
	"unicode"
)

// quoteText is s as text output prints what came from a store or a user:
// s itself when every rune is printable (tab included), else s quoted as a
// Go string literal ("a\nb\x1b[2J"), so that a stored message, header or
// body can never forge an output line or send a terminal escape sequence.
func quoteText(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r != '\t' && !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
