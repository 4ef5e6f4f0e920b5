package project

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// lineError is a kci.yaml mistake at a line: "kci.yaml:12: unknown key
// "bogus" in trees[1]".
type lineError struct {
	file string
	line int
	msg  string
}

func (e *lineError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg)
	}
	return e.file + ": " + e.msg
}

// checker walks the YAML tree against File's type before it is decoded,
// so every mistake names its line and its place (vm.cpus, trees[1]) in
// kci's words rather than yaml.v3's Go type names; it also remembers
// where each value was for the checks after decoding.
type checker struct {
	file  string
	lines map[string]int // path (vm.cpus, trees[1].series[0]) -> line
}

var durationType = reflect.TypeFor[time.Duration]()

func (c *checker) errf(n *yaml.Node, format string, a ...any) error {
	return &lineError{file: c.file, line: n.Line, msg: fmt.Sprintf(format, a...)}
}

// walk checks node n against type t at path.
func (c *checker) walk(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == 0 { // an empty file
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	c.lines[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value is the zero value, the default
	}
	switch {
	case t.Kind() == reflect.Struct:
		return c.walkMap(n, t, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return c.errf(n, "%s: want a list, e.g. [a, b]", path)
		}
		for i, e := range n.Content {
			if err := c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return c.errf(n, "%s: want a single value, not a list or a mapping", path)
	}
	return c.scalar(n, t, path)
}

// scalar checks that a scalar reads as t.
func (c *checker) scalar(n *yaml.Node, t reflect.Type, path string) error {
	v := n.Value
	switch {
	case t == durationType:
		if _, err := time.ParseDuration(v); err != nil {
			return c.errf(n, "%s: %q is not a duration (e.g. 5s, 1m30s)", path, v)
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		if _, err := strconv.ParseInt(v, 0, 64); err != nil {
			if _, ferr := strconv.ParseFloat(v, 64); ferr == nil {
				return c.errf(n, "%s: %s is not a whole number", path, v)
			}
			return c.errf(n, "%s: %q is not a number", path, v)
		}
	case t.Kind() == reflect.Float64:
		if _, err := strconv.ParseFloat(v, 64); err != nil || n.Tag == "!!str" {
			return c.errf(n, "%s: %q is not a number", path, v)
		}
	case t.Kind() == reflect.Bool:
		if n.Tag != "!!bool" {
			return c.errf(n, "%s: %q is not true or false", path, v)
		}
	}
	return nil
}

// walkMap checks a mapping against struct t: every key must be one of its
// yaml fields, once.
func (c *checker) walkMap(n *yaml.Node, t reflect.Type, path string) error {
	where := path
	if where == "" {
		where = "the top level"
	}
	if n.Kind != yaml.MappingNode {
		return c.errf(n, "%s: want a mapping (key: value lines)", where)
	}
	fields := yamlFields(t)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok {
			return c.errf(k, "unknown key %q in %s (known: %s)", k.Value, where, strings.Join(fieldNames(t), ", "))
		}
		if seen[k.Value] {
			return c.errf(k, "key %q given twice in %s", k.Value, where)
		}
		seen[k.Value] = true
		sub := k.Value
		if path != "" {
			sub = path + "." + k.Value
		}
		if err := c.walk(v, ft, sub); err != nil {
			return err
		}
	}
	return nil
}

// yamlFields maps a struct's yaml keys to their types (embedded kernel
// types included, as yaml.v3 reads them).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "-" && f.IsExported() {
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			out = append(out, name)
		}
	}
	return out
}
