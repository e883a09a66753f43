package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/fsbench/fsbench/internal/bytesize"
)

// SuiteParams are the sizes of the suites of a run, by suite: each suite's own value, a pointer
// to the struct its package declared (internal/suites registers it here with RegisterParams).
// The configuration sets them in a table named after the suite ([bonnie] files = 2048), and
// results.json records those of the suites that ran (config.params), so that a run is
// described entirely by its file. The zero value holds none; DefaultSuiteParams holds every
// registered suite's defaults.
//
// A value is never changed in place: Set and Decode copy it first, so that two Configs never
// share a suite's sizes.
type SuiteParams struct{ m map[string]any }

// paramSuite is a registered suite's sizes.
type paramSuite struct {
	rank     int
	defaults any // a pointer to a struct
}

var (
	paramsMu  sync.RWMutex
	paramsReg = map[string]paramSuite{}
)

// RegisterParams declares the sizes of a suite: defaults is a pointer to a struct whose
// exported fields have json tags, the keys of its [suite] table and of results.json. A field
// may be an int (an integer), a uint64 (an integer, or a size such as "512M" for a field whose
// key ends in _bytes), a bool, a Duration (a string such as "10s") or a string. When the struct
// has a method Check() error, it is called on every value a configuration or a flag made.
// rank orders the suites in results.json. internal/suites calls it when a suite registers.
func RegisterParams(suite string, rank int, defaults any) error {
	v := reflect.ValueOf(defaults)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("params of %s: want a pointer to a struct, not %T", suite, defaults)
	}
	for _, f := range paramFields(v.Elem().Type()) {
		if !settable(f.typ) {
			return fmt.Errorf("params of %s: field %s has a type a configuration cannot set (%s)", suite, f.key, f.typ)
		}
	}
	paramsMu.Lock()
	defer paramsMu.Unlock()
	if _, dup := paramsReg[suite]; dup {
		return fmt.Errorf("params of %s registered twice", suite)
	}
	paramsReg[suite] = paramSuite{rank: rank, defaults: defaults}
	return nil
}

// paramTables lists the suites that have sizes, by rank.
func paramTables() []string {
	paramsMu.RLock()
	defer paramsMu.RUnlock()
	names := slices.Collect(maps.Keys(paramsReg))
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := paramsReg[a].rank, paramsReg[b].rank; ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

func registered(suite string) (paramSuite, bool) {
	paramsMu.RLock()
	defer paramsMu.RUnlock()
	p, ok := paramsReg[suite]
	return p, ok
}

// DefaultSuiteParams are every registered suite's default sizes.
func DefaultSuiteParams() SuiteParams {
	out := SuiteParams{m: map[string]any{}}
	for _, name := range paramTables() {
		p, _ := registered(name)
		out.m[name] = clone(p.defaults)
	}
	return out
}

// Get returns the sizes of the named suite (the pointer type it registered), nil when the
// params hold none for it. The value must not be changed: use Set.
func (p SuiteParams) Get(suite string) any { return p.m[suite] }

// Equal reports whether p and q hold the same sizes for the same suites.
func (p SuiteParams) Equal(q SuiteParams) bool {
	if len(p.m) != len(q.m) {
		return false
	}
	for k, v := range p.m {
		if !reflect.DeepEqual(v, q.m[k]) {
			return false
		}
	}
	return true
}

// IsZero reports whether p holds no suite's sizes (results.json then leaves params out).
func (p SuiteParams) IsZero() bool { return len(p.m) == 0 }

// Only returns the sizes of the named suites alone: what results.json records of a run.
func (p SuiteParams) Only(suites Suites) SuiteParams {
	out := SuiteParams{m: map[string]any{}}
	for name, v := range p.m {
		if suites.Has(name) {
			out.m[name] = v
		}
	}
	return out
}

// Set sets one size of a suite, by its key, as a flag does (--cuts sets powercut's cuts): v
// is read as the same key in the configuration file would be. It starts from the suite's
// defaults when p has none for it.
func (p *SuiteParams) Set(suite, key string, v any) error {
	val, err := p.writable(suite)
	if err != nil {
		return err
	}
	fields := paramFields(val.Elem().Type())
	i := slices.IndexFunc(fields, func(f paramField) bool { return f.key == key })
	if i < 0 {
		return fmt.Errorf("[%s] has no key %q (its keys: %s)", suite, key, strings.Join(keysOf(fields), ", "))
	}
	if err := setField(val.Elem().Field(fields[i].index), key, v); err != nil {
		return err
	}
	return check(val.Interface())
}

// writable returns a copy of suite's value, already in p, for p to change.
func (p *SuiteParams) writable(suite string) (reflect.Value, error) {
	reg, ok := registered(suite)
	if !ok {
		return reflect.Value{}, fmt.Errorf("no suite %q has sizes (suites with sizes: %s)", suite, strings.Join(paramTables(), ", "))
	}
	cur := p.m[suite]
	if cur == nil {
		cur = reg.defaults
	}
	c := clone(cur)
	m := maps.Clone(p.m)
	if m == nil {
		m = map[string]any{}
	}
	m[suite] = c
	p.m = m
	return reflect.ValueOf(c), nil
}

// MarshalJSON writes each suite's sizes under its name, in rank order:
// {"bonnie": {...}, "smallfiles": {...}}.
func (p SuiteParams) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, name := range orderedNames(p.m) {
		v, err := json.Marshal(p.m[name])
		if err != nil {
			return nil, fmt.Errorf("params of %s: %w", name, err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON wrote (a run request another fsbench hands on): each
// suite's sizes over its defaults. A suite this program has not registered is refused.
func (p *SuiteParams) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	out := SuiteParams{m: map[string]any{}}
	for name, msg := range raw {
		reg, ok := registered(name)
		if !ok {
			return fmt.Errorf("params: no suite %q has sizes (suites with sizes: %s)", name, strings.Join(paramTables(), ", "))
		}
		v := clone(reg.defaults)
		if err := json.Unmarshal(msg, v); err != nil {
			return fmt.Errorf("params of %s: %w", name, err)
		}
		out.m[name] = v
	}
	*p = out
	return nil
}

// orderedNames are m's suites in rank order; a suite not registered (none in practice) last.
func orderedNames(m map[string]any) []string {
	var out []string
	for _, name := range paramTables() {
		if _, ok := m[name]; ok {
			out = append(out, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// decodeTable reads a suite's [suite] table of the configuration over its current sizes,
// reporting each problem at its key's line (at reports a key's line).
func (p *SuiteParams) decodeTable(suite string, table map[string]any, d decoder, at func(key string) int) {
	val, err := p.writable(suite)
	if err != nil {
		d.p.add(at(""), "%v", err)
		return
	}
	fields := paramFields(val.Elem().Type())
	keys := slices.Collect(maps.Keys(table))
	slices.SortFunc(keys, func(a, b string) int {
		if la, lb := at(a), at(b); la != lb {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	known := keysOf(fields)
	for _, k := range keys {
		i := slices.IndexFunc(fields, func(f paramField) bool { return f.key == k })
		if i < 0 {
			d.p.add(at(k), "unknown key %q in [%s]%s (known keys: %s)", k, suite, didYouMean(k, known), strings.Join(known, ", "))
			continue
		}
		if err := setField(val.Elem().Field(fields[i].index), k, table[k]); err != nil {
			d.p.addErr(at(k), err, "[%s] %v", suite, err)
		}
	}
	if err := check(val.Interface()); err != nil {
		d.p.addErr(at(""), err, "[%s] %v", suite, err)
	}
}

// paramField is one settable field of a suite's sizes.
type paramField struct {
	key   string
	index int
	typ   reflect.Type
}

// paramFields lists the fields of a params struct that have a json key.
func paramFields(t reflect.Type) []paramField {
	var out []paramField
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || key == "" || key == "-" {
			continue
		}
		out = append(out, paramField{key: key, index: i, typ: f.Type})
	}
	return out
}

func keysOf(fields []paramField) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.key
	}
	slices.Sort(out)
	return out
}

var durationType = reflect.TypeFor[Duration]()

func settable(t reflect.Type) bool {
	if t == durationType {
		return true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Uint64, reflect.Bool, reflect.String:
		return true
	}
	return false
}

// setField sets f from a decoded TOML value (or a flag's Go value), checking its type.
func setField(f reflect.Value, key string, v any) error {
	if n, ok := v.(int); ok {
		v = int64(n) // a flag's int
	}
	if f.Type() == durationType {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s must be a duration such as \"10s\" or \"2m\", not %s", key, tomlType(v))
		}
		var d Duration
		if err := d.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		f.Set(reflect.ValueOf(d))
		return nil
	}
	switch f.Kind() {
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s must be true or false, not %s", key, tomlType(v))
		}
		f.SetBool(b)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s must be a string, not %s", key, tomlType(v))
		}
		f.SetString(s)
	case reflect.Int:
		n, ok := v.(int64)
		if !ok || n < 0 {
			return fmt.Errorf("%s must be a whole number of at least 0, not %s", key, tomlType(v))
		}
		f.SetInt(n)
	case reflect.Uint64:
		return setUint(f, key, v)
	default:
		return fmt.Errorf("%s cannot be set", key)
	}
	return nil
}

// setUint sets a uint64 field: an integer, or for a size (a key ending in _bytes) a string such
// as "512M" in the one size grammar.
func setUint(f reflect.Value, key string, v any) error {
	size := strings.HasSuffix(key, "_bytes")
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("%s must not be negative, not %d", key, v)
		}
		f.SetUint(uint64(v))
	case uint64:
		f.SetUint(v)
	case string:
		if !size {
			return fmt.Errorf("%s must be an integer, not %s", key, tomlType(v))
		}
		n, err := bytesize.Parse(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		f.SetUint(n)
	default:
		if size {
			return fmt.Errorf("%s must be a size such as \"512M\" or an integer number of bytes, not %s", key, tomlType(v))
		}
		return fmt.Errorf("%s must be an integer, not %s", key, tomlType(v))
	}
	return nil
}

// check calls the value's Check method, when it has one.
func check(v any) error {
	if c, ok := v.(interface{ Check() error }); ok {
		return c.Check()
	}
	return nil
}

// clone copies the struct a pointer points to.
func clone(v any) any {
	src := reflect.ValueOf(v).Elem()
	dst := reflect.New(src.Type())
	dst.Elem().Set(src)
	return dst.Interface()
}
