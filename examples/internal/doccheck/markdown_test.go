package doccheck

import (
	"regexp"
	"strings"
)

// block is one ```go block of a Markdown file.
type block struct {
	file string // the Markdown file's path
	line int    // the line of the block's first line of code, from 1
	text string // the code, without the fences and their indentation
	// shows is the .go file that the line before the fence links to, as a
	// path relative to the Markdown file ("[main.go](main.go):"): the block
	// must be that file. Empty when the line links to none.
	shows string
}

// showsLink matches a line that ends with a link to a .go file, optionally
// followed by a colon: the line that introduces a complete program.
var showsLink = regexp.MustCompile(`\]\(([^)\s]+\.go)\):?\s*$`)

// goBlocks returns the ```go blocks of md, a Markdown file at path. Fences
// of other languages are skipped whole, so a "```go" line inside one is
// not a block.
func goBlocks(path string, md string) []block {
	var (
		blocks   []block
		lines    = strings.Split(md, "\n")
		previous string // the last non-blank line outside a fence
	)
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " \t")
		if !strings.HasPrefix(trimmed, "```") {
			if strings.TrimSpace(lines[i]) != "" {
				previous = lines[i]
			}
			continue
		}
		indent := lines[i][:len(lines[i])-len(trimmed)]
		lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
		start := i + 1
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, strings.TrimPrefix(lines[i], indent))
		}
		link := showsLink.FindStringSubmatch(previous)
		previous = ""
		if lang != "go" {
			continue
		}
		b := block{file: path, line: start + 1, text: strings.Join(code, "\n") + "\n"}
		if link != nil {
			b.shows = link[1]
		}
		blocks = append(blocks, b)
	}
	return blocks
}
