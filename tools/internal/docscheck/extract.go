// Package docscheck finds every command the documents (README.md, ARCHITECTURE.md, docs/*.md)
// show and checks that it still works: make docs-check runs each one for real in a scratch
// directory, on image files and the simulated card only, and go test checks the quick part of
// it (every command is known, its subcommand and flags exist, its make target and script are
// there). A command that cannot be run here (it needs a real card, a board, a farm or takes an
// hour) is listed with the reason and the test that runs its kind instead: never skipped
// silently.
package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Command is one command a document shows.
type Command struct {
	File string // the document, relative to the repository
	Line int    // 1-based line of the command's first line
	Text string // the command as written, continuation lines joined, comment dropped
	// Inline: written in running text (`fsbench list`) rather than in a shell block.
	Inline bool
}

// Where is file:line.
func (c Command) Where() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// shellLangs are the fence languages of a block of commands. Output, configuration and other
// blocks must say what they are (text, toml, json, ...): a block with no language holding a
// line that starts like a command is refused, so that no command escapes the check.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// commandStart matches text that starts like a command of this project: fsbench, make, go,
// a setup script, possibly behind sudo or an environment assignment.
var commandStart = regexp.MustCompile(`^(sudo\s+)?([A-Z_]+=\S*\s+)*(/usr/bin/time(\s+-v)?\s+)?(\./)?(fsbench\s|make(\s|$)|go\s+(test|doc|list|run|build|tool)\s|scripts/\S+\.sh)`)

// inlineCode matches a code span in running text.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// Extract returns the commands of one Markdown document, and a problem for each unlabelled
// block that holds a command.
func Extract(file string, md []byte) (cmds []Command, problems []string) {
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		in      bool   // inside a fenced block
		lang    string // its language
		fence   string // the fence that opened it
		pending *Command
	)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			f := trimmed[:3]
			if !in {
				in, fence, lang = true, f, strings.TrimSpace(trimmed[3:])
			} else if f == fence {
				in = false
				if pending != nil {
					cmds = append(cmds, *pending)
					pending = nil
				}
			}
			continue
		}
		if in {
			switch {
			case shellLangs[lang]:
				if pending != nil {
					pending.Text += " " + strings.TrimSuffix(stripComment(trimmed), `\`)
					pending.Text = strings.TrimSpace(pending.Text)
					if !strings.HasSuffix(trimmed, `\`) {
						cmds = append(cmds, *pending)
						pending = nil
					}
					continue
				}
				text := stripComment(trimmed)
				if text == "" {
					continue
				}
				c := Command{File: file, Line: n, Text: strings.TrimSpace(strings.TrimSuffix(text, `\`))}
				if strings.HasSuffix(text, `\`) {
					pending = &c
					continue
				}
				cmds = append(cmds, c)
			case lang == "" && commandStart.MatchString(trimmed):
				problems = append(problems, fmt.Sprintf("%s:%d: a block without a language holds a command (%q): fence it as ```sh, or as ```text if it is output", file, n, trimmed))
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			if commandStart.MatchString(m[1]) {
				cmds = append(cmds, Command{File: file, Line: n, Text: m[1], Inline: true})
			}
		}
	}
	if in {
		problems = append(problems, fmt.Sprintf("%s: a fenced block is not closed", file))
	}
	return cmds, problems
}

// stripComment drops a shell comment: a # at the start or after a space, outside quotes.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// Words splits a command line as the shell would for the simple commands the documents show:
// on blanks, with single and double quotes grouping.
func Words(s string) []string {
	var (
		out   []string
		cur   strings.Builder
		quote rune
		any   bool
	)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, any = r, true
		case r == ' ' || r == '\t':
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
