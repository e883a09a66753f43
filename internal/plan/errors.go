package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Error is one problem in a configuration, located in its file when it came from one.
// Parse and Validate return one *Error, or several joined with errors.Join (sorted by line,
// one per line of output), so that a user fixes every mistake in one go.
type Error struct {
	File string // configuration file name; "" for values that came from flags
	Line int    // 1-based line in File; 0 if unknown
	Msg  string // what is wrong and, where the user can act, what to do
	Err  error  // underlying error (a toml.ParseError, a bytesize.Parse error, ...), may be nil
}

// Error formats the problem as "file:line: message", the form editors and terminals link.
func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	default:
		return e.Msg
	}
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// problems collects the errors found in one configuration.
type problems struct {
	file string
	list []*Error
}

// add records a problem at line (0 = unknown), with msg formatted like fmt.Sprintf.
func (p *problems) add(line int, format string, args ...any) {
	p.addErr(line, nil, format, args...)
}

// addErr is add with an underlying error kept for errors.Is and errors.As.
func (p *problems) addErr(line int, cause error, format string, args ...any) {
	p.list = append(p.list, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...), Err: cause})
}

// maxReported is how many problems err lists before it only counts the rest.
const maxReported = 20

// err returns nil, the only problem, or all of them joined, sorted by line and without
// repeats (a bad value in a list that expands into several variants is reported once).
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	type key struct {
		line int
		msg  string
	}
	seen := map[key]bool{}
	var list []*Error
	for _, e := range p.list {
		if k := (key{e.Line, e.Msg}); !seen[k] {
			seen[k] = true
			list = append(list, e)
		}
	}
	slices.SortStableFunc(list, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	if len(list) == 1 {
		return list[0]
	}
	// A value repeated across a large matrix would otherwise print a screenful per variant.
	if len(list) > maxReported {
		more := &Error{File: p.file, Msg: fmt.Sprintf("... and %d more problems like these", len(list)-maxReported)}
		list = append(list[:maxReported], more)
	}
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// InputError is a refusal of what the user asked for (a flag, a value, a combination), found
// before anything was made. The command line reports it with exit code 2, like a bad flag.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ExitCode is 2: the user fixes it by changing the command line or the configuration.
func (e *InputError) ExitCode() int { return 2 }

// Refusef makes an *InputError.
func Refusef(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}
