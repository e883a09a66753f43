package plan

import (
	"errors"
	"strings"
)

// SplitArgs splits s into words the way a POSIX shell would, without running anything and
// without any expansion: words are separated by blanks (space, tab, newline); '…' keeps its
// content literally; "…" keeps its content except that a backslash escapes ", \, $ and `;
// outside quotes a backslash escapes the next character. Quotes join with the surrounding
// text ("a"'b'c is one word) and an empty pair of quotes is an empty word. So
// `-O ^has_journal -E "stride=4,stripe-width=1024"` gives [-O ^has_journal -E
// stride=4,stripe-width=1024]. Characters such as *, ~ and $ stay as they are: mkfs and
// mount options use them literally (f2fs's compress_extension=* for one), and fsbench runs
// programs directly, never through a shell.
func SplitArgs(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool // cur holds a word, possibly empty ("" was seen)
	)
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			flush()
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New(`trailing backslash: escape it as \\ or quote it`)
			}
			i++
			// As in sh, backslash-newline joins lines instead of producing a newline.
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New(`unterminated single quote ('): close it`)
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, errors.New(`unterminated double quote ("): close it`)
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}
