package plan

import (
	"strconv"
	"strings"
)

// keyLines says on which line each key of a configuration file is. BurntSushi/toml keeps
// key positions in its MetaData but does not export them (only toml.ParseError has a line),
// so scanKeyLines finds them in the text itself. Only what error messages need is kept:
// the first component of each key at the top level, in each [[variant]] table and in each
// [table] (the suites' sizes), and the line of each [[variant]] header.
type keyLines struct {
	top      map[string]int            // top-level key, or table name of a [table] header → line
	variants []tableLines              // one per [[variant]] header, in file order
	tables   map[string]map[string]int // [table] name → its keys' lines
}

// tableLines are the lines of one [[variant]] table.
type tableLines struct {
	header int            // line of the [[variant]] header
	keys   map[string]int // key (first component of a dotted key) → line
}

// topKey returns the line of a top-level key, 0 if it is not in the file.
func (kl *keyLines) topKey(key string) int { return kl.top[key] }

// variantKey returns the line of key in the i-th [[variant]] table; when that key was not
// found, the table's header line; when the variants were written as an inline array
// (variant = [{...}]), the line of "variant".
func (kl *keyLines) variantKey(i int, key string) int {
	if i < 0 || i >= len(kl.variants) {
		return kl.top["variant"]
	}
	if l, ok := kl.variants[i].keys[key]; ok {
		return l
	}
	return kl.variants[i].header
}

// tableKey returns the line of key in the [table] table; when that key was not found (or key
// is ""), the line of the table's header.
func (kl *keyLines) tableKey(table, key string) int {
	if l, ok := kl.tables[table][key]; ok && key != "" {
		return l
	}
	return kl.top[table]
}

// variantLine returns the line of the i-th [[variant]] header (see variantKey).
func (kl *keyLines) variantLine(i int) int {
	if i < 0 || i >= len(kl.variants) {
		return kl.top["variant"]
	}
	return kl.variants[i].header
}

// scanKeyLines finds the lines of keys and table headers in a TOML document. It is a
// line-oriented approximation of the TOML grammar, good for documents that the TOML
// decoder has accepted: a key or header is recognised at the start of a line (after
// blanks) outside multi-line strings, arrays and inline tables, which it tracks so that a
// "key = value" inside a """…""" string is not taken for a key. Bare keys (letters,
// digits, _ and -) are handled fully; quoted keys ("a b" = 1, 'c' = 2) are recognised with
// the common escapes; keys inside inline tables are not recorded, so errors about them
// point at the line of the enclosing key instead.
func scanKeyLines(text string) *keyLines {
	kl := &keyLines{top: map[string]int{}, tables: map[string]map[string]int{}}
	var table string                          // the [table] whose keys follow, in inTable
	text = strings.TrimPrefix(text, "\ufeff") // a byte order mark, as some editors write
	const (
		inTop = iota
		inVariant
		inTable
		inOther
	)
	ctx := inTop
	var st valueState
	for n, line := range strings.Split(text, "\n") {
		lineNo := n + 1
		rest := line
		if st.atLineStart() {
			s := strings.TrimLeft(line, " \t")
			switch {
			case strings.HasPrefix(s, "["):
				double := strings.HasPrefix(s, "[[")
				open, close := "[", "]"
				if double {
					open, close = "[[", "]]"
				}
				path, after, ok := parseKeyPath(s[len(open):])
				if !ok || !strings.HasPrefix(after, close) {
					break
				}
				rest = after[len(close):]
				switch {
				case path[0] == "variant" && len(path) == 1 && double:
					kl.variants = append(kl.variants, tableLines{header: lineNo, keys: map[string]int{}})
					ctx = inVariant
				case path[0] == "variant" && len(path) > 1 && len(kl.variants) > 0:
					// [variant.x] after a [[variant]] is a subtable of that variant: the
					// variant gets a key "x", which is unknown and reported at this line.
					setOnce(kl.variants[len(kl.variants)-1].keys, path[1], lineNo)
					ctx = inOther
				case len(path) == 1 && !double:
					setOnce(kl.top, path[0], lineNo)
					table, ctx = path[0], inTable
					if kl.tables[table] == nil {
						kl.tables[table] = map[string]int{}
					}
				default:
					setOnce(kl.top, path[0], lineNo)
					ctx = inOther
				}
			default:
				path, after, ok := parseKeyPath(s)
				if !ok || !strings.HasPrefix(after, "=") {
					break
				}
				rest = after[1:]
				switch ctx {
				case inTop:
					setOnce(kl.top, path[0], lineNo)
				case inVariant:
					setOnce(kl.variants[len(kl.variants)-1].keys, path[0], lineNo)
				case inTable:
					setOnce(kl.tables[table], path[0], lineNo)
				}
			}
		}
		st.scan(rest)
	}
	return kl
}

func setOnce(m map[string]int, key string, line int) {
	if _, ok := m[key]; !ok {
		m[key] = line
	}
}

// valueState follows the parts of TOML values that can span lines: multi-line strings
// and (multi-line) arrays and inline tables.
type valueState struct {
	ml    string // `"""` or `'''` while inside a multi-line string
	depth int    // open [ and { of values
}

func (st *valueState) atLineStart() bool { return st.ml == "" && st.depth == 0 }

// scan moves the state over the rest of one line.
func (st *valueState) scan(s string) {
	for i := 0; i < len(s); i++ {
		if st.ml != "" {
			j := indexDelim(s[i:], st.ml)
			if j < 0 {
				return
			}
			i += j + 2
			// Up to two more quotes may close the string: """a""""" ends with a"".
			for k := 0; k < 2 && i+1 < len(s) && s[i+1] == st.ml[0]; k++ {
				i++
			}
			st.ml = ""
			continue
		}
		switch c := s[i]; c {
		case '#':
			return
		case '"', '\'':
			delim := strings.Repeat(string(c), 3)
			if strings.HasPrefix(s[i:], delim) {
				st.ml = delim
				i += 2
				continue
			}
			// A single-line string: skip to its closing quote (basic strings have escapes).
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			st.depth++
		case ']', '}':
			if st.depth > 0 {
				st.depth--
			}
		}
	}
}

// indexDelim finds the closing delimiter of a multi-line string in s; in a basic one
// (""") a backslash escapes the next character.
func indexDelim(s, delim string) int {
	for i := 0; i+len(delim) <= len(s); i++ {
		if delim[0] == '"' && s[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			return i
		}
	}
	return -1
}

// parseKeyPath parses a possibly dotted TOML key at the start of s (after blanks) and
// returns its components and the text after it and any following blanks.
func parseKeyPath(s string) (path []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", false
		}
		var part string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", false
			}
			part = s[1:end]
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				part = u
			}
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, s = s[1:1+end], s[end+2:]
		default:
			end := 0
			for end < len(s) && isBareKeyChar(s[end]) {
				end++
			}
			if end == 0 {
				return nil, "", false
			}
			part, s = s[:end], s[end:]
		}
		path = append(path, part)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path, s, true
		}
		s = s[1:]
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
