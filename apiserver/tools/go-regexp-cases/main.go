// Command go-regexp-cases records how Go's regexp package compiles and matches a list of patterns, as the
// reference for the API server's Go-pattern front end (apiserver/src/schema/go_regexp.rs):
//
//	cd apiserver/tools/go-regexp-cases && go run . > ../../src/schema/testdata/go_regexp_cases.json
//
// kube-apiserver v1.33 is built with Go 1.24. Go 1.25 changed only the lookup of Unicode class names:
// it adds aliases (\p{Letter}), case-insensitive names, Cn and LC, lets \p{C} include unassigned code
// points, and (as of go1.26.8) no longer finds multi-word scripts such as \p{Old_Italic}. Such names are
// left out here and tested by hand in the Rust module; every case listed behaves the same in Go 1.24 and
// in the Go this is run with.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

type testCase struct {
	Pattern string   `json:"pattern"`
	Texts   []string `json:"texts,omitempty"`
}

type result struct {
	Pattern string   `json:"pattern"`
	Error   string   `json:"error,omitempty"`
	Texts   []string `json:"texts,omitempty"`
	Matches []bool   `json:"matches,omitempty"`
}

func c(pattern string, texts ...string) testCase { return testCase{pattern, texts} }

var cases = []testCase{
	// Patterns seen in CRDs and Kubernetes validation.
	c(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, "my-name", "a", "-a", "a-", "My", ""),
	c(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, "example.com", "a..b", "x.y-z"),
	c(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`, "", "v1.2_3", "_x", "x_"),
	c(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`, "500Mi", "1.5", "five", "1e3", ".5", "+1Ki"),
	c(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`, "1h30m", "0", "1x", "10ms"),
	c(`(^0|([0-9]*[.])?[0-9]+((K|M|G|T|E|P)i?)?B)$`, "0", "1.5GiB", "10KB", "1.5", "x0"),
	c(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`, "v1.2.3", "1.2.3-rc.1+build.5", "01.2.3", "1.2"),
	c(`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, "me@example.com", "me@example", "a b@c.de"),
	c(`^https?://[^\s/$.?#].[^\s]*$`, "https://example.com/x", "ftp://x", "http://"),
	c(`^(Always|Never|IfNotPresent)$`, "Never", "never", "Sometimes"),
	c(`^\d{3}-\d{4}$`, "555-1234", "55-1234", "٥٥٥-١٢٣٤"),
	c(`^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$`, "host.example", "bücher.de", "-bad", "a_b"),
	c(`^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`, "a8098c1a-f86e-41d4-b1ce-ae1a0a8f9e44", "a8098c1a-f86e-11d4-b1ce-ae1a0a8f9e44"),
	c(`^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`, "aGVsbG8=", "aGVsbG8", ""),

	// Matching is a search, as Go's MatchString; anchors and line mode.
	c(`b+`, "aaabbb", "aaa"),
	c(``, "", "anything"),
	c(`^b`, "ab", "ba"),
	c(`a$`, "a", "a\n", "ba"),
	c(`(?m)a$`, "a\nb", "ab"),
	c(`(?m)^b`, "a\nb", "ab"),
	c(`\Aa`, "ab", "ba"),
	c(`a\z`, "ba", "a\n"),
	c(`(?m)\Aa`, "b\na"),
	c(`a.b`, "axb", "a\nb"),
	c(`(?s)a.b`, "a\nb"),
	c(`(?s:.)(?-s:.)`, "\na", "a\n"),
	c(`[^a]`, "\n", "a"),
	c(`^$`, "", "\n"),
	c(`(?m)^$`, "", "\n", "a"),
	c(`^*a`, "a", "ba"),
	c(`$+`, "", "a"),
	c(`\b*x`, "x"),
	c(`()*`, "", "a"),
	c(`(?:)+a`, "a"),
	c(`(|)`, ""),
	c(`a|`, "b"),
	c(`|a`, "b"),
	c(`a|b|c`, "c", "d"),

	// ASCII-only Perl classes and word boundaries.
	c(`\d`, "7", "٣", "７"),
	c(`\D`, "٣", "7"),
	c(`\s`, " ", "\t", "\n", "\f", "\r", "\v", "\u00a0", "\u2003"),
	c(`\S`, "\v", " "),
	c(`\w`, "_", "é", "K"),
	c(`\W`, "é", "a"),
	c(`\bword\b`, "a word here", "swordfish", "éwordé"),
	c(`\bé`, "é", "aé"),
	c(`a\b`, "aé", "ab"),
	c(`a\B`, "ab", "aé"),
	c(`[\d\s]`, "\v", "5"),
	c(`[^\d]`, "5", "x"),
	c(`[\D]`, "5", "x"),
	c(`[^\D]`, "5", "x"),
	c(`[\w-]+$`, "a-b", "é"),

	// POSIX classes (ASCII).
	c(`^[[:alpha:]]+$`, "abc", "abç", "ab1"),
	c(`[[:^alpha:]]`, "a", "1"),
	c(`[^[:digit:]]`, "1", "a"),
	c(`[[:space:]]`, "\v", "\u00a0"),
	c(`[[:word:][:punct:]]`, "_", "!", " "),
	c(`[[:alnum:][:blank:][:cntrl:][:graph:][:lower:][:print:][:upper:][:xdigit:][:ascii:]]`, "\x7f", "é"),
	c(`[[:foo:]]`),
	c(`[[:alpha:]`),
	c(`[[:alpha]`, ":", "[", "x"),
	c(`[[:a]b:]]`),

	// Unicode classes: general categories, scripts (not script extensions), negations, folding.
	c(`^\p{Thai}+$`, "ภาษาไทย", "thai", "ภา1"),
	c(`\p{Lu}`, "É", "é", "Σ", "ǅ", "1"),
	c(`(?i)\p{Lu}`, "é", "1"),
	c(`\P{Lu}`, "É", "é"),
	c(`(?i)\P{Lu}`, "é", "É", "1"),
	c(`\p{Ll}`, "é", "É", "ß"),
	c(`\p{Lt}`, "ǅ", "Ǆ"),
	c(`\pL`, "a", "1"),
	c(`\PL`, "a", "1"),
	c(`\p{^L}`, "a", "1"),
	c(`\P{^L}`, "a", "1"),
	c(`^\p{L}+$`, "héllo", "h3llo", "日本語"),
	c(`\p{N}`, "٣", "Ⅻ", "a"),
	c(`\p{Nd}`, "٣", "Ⅻ"),
	c(`\p{Greek}`, "α", "a", "\u0345"),
	c(`\p{Arabic}`, "ب", "\u0640"),
	c(`\p{Devanagari}`, "क", "\u0964"),
	c(`\p{Han}`, "漢", "か"),
	c(`\p{Common}`, "1", "a"),
	c(`\p{Inherited}`, "\u0301", "a"),
	c(`\p{Latin}`, "a", "α"),
	c(`\p{Cyrillic}\p{Hebrew}\p{Hiragana}\p{Katakana}\p{Hangul}`, "яאかカ한"),
	c(`\p{Nko}|\p{Kawi}|\p{Vithkuqi}`, "\u07ca", "a"),
	c(`\p{Cc}`, "\x01", "a"),
	c(`\p{Cf}`, "\u200b", "a"),
	c(`\p{Co}`, "\ue000", "a"),
	c(`\p{Cs}`, "a", "\ufffd"),
	c(`[^\p{Cs}]`, "a"),
	c(`\p{Zs}`, " ", "\u00a0", "\t"),
	c(`\p{Z}`, "\u2028", "a"),
	c(`\p{P}\p{S}`, "!+", "a+"),
	c(`\p{M}`, "\u0301", "a"),
	c(`\p{Any}`, "", "a", "\n"),
	c(`\P{Any}`, "a", ""),
	c(`[\P{Any}]`, "a"),
	c(`[^\P{Any}]`, "a"),
	c(`[\p{Greek}\d]`, "α", "5", "a"),
	c(`[^\P{L}]`, "a", "1"),
	c(`[\pL]`, "a"),
	c(`[\p{^L}]`, "a", "1"),
	c(`\p{Foo}`),
	c(`\pX`),
	c(`\p`),
	c(`\p{}`),
	c(`\p{^}`),
	c(`\p{Greek`),
	c(`[\p{Greek]`),
	c(`\p{IsGreek}`),
	c(`\p{sc=Greek}`),
	c(`\p{Alphabetic}`),

	// Case folding: simple folding orbits, as Go's unicode.SimpleFold.
	c(`(?i)straße`, "STRASSE", "STRAẞE", "Straße", "strasse"),
	c(`(?i)ß`, "ẞ", "ss"),
	c(`(?i)ẞ`, "ß"),
	c(`(?i)σ`, "Σ", "ς", "s"),
	c(`(?i)k`, "K", "\u212a", "x"),
	c(`(?i)s`, "ſ", "S"),
	c(`(?i)\w`, "\u212a", "ſ", "é"),
	c(`(?i)\W`, "\u212a", "ſ", "é"),
	c(`(?i)[^k]`, "\u212a", "K", "j"),
	c(`(?i)[a-f]+$`, "ABCdef", "g"),
	c(`(?i)[^\W]`, "\u212a", "é"),
	c(`(?i)[[:^alpha:]]`, "ſ", "1"),
	c(`(?i)\p{Greek}`, "Ω", "\u2126"),
	c(`(?i)Ǆ`, "ǅ", "ǆ"),
	c(`(?i)abc`, "AbC", "abd"),
	c(`(?i:a)b`, "Ab", "AB"),
	c(`a(?i)b`, "aB", "AB"),
	c(`(?i)a(?-i)b`, "Ab", "AB"),
	c(`(a(?i)b)c`, "aBc", "aBC"),
	c(`(?i)(?-i:a)b`, "aB", "AB"),
	c(`(?i-i)a`, "A"),

	// Flags and groups.
	c(`(?U)a+`, "aaa"),
	c(`(?)a`, "a"),
	c(`(?:a|b)+$`, "abab", "abc"),
	c(`(?P<name>x)`, "x"),
	c(`(?<name>x)`, "x"),
	c(`(?P<1>x)`, "x"),
	c(`(?P<n>x)(?P<n>y)`, "xy"),
	c(`(?P<a-b>x)`),
	c(`(?P<>x)`),
	c(`(?<>x)`),
	c(`(?P<name`),
	c(`(?P<name)>x`),
	c(`(?P<é>x)`),
	c(`(?P=name)`),
	c(`(?P`),
	c(`(?<`),
	c(`(?'n'x)`),
	c(`(?i`),
	c(`(?x)a`),
	c(`(?-)a`),
	c(`(?i-)a`),
	c(`(?--i)a`),
	c(`(?=a)`),
	c(`(?!a)`),
	c(`(?<=a)b`),
	c(`(?#comment)`),
	c(`(?ié)`),
	c(`a(?i)*`, "", "aaa"),
	c(`a*(?i)*`, "aaa"),
	c(`(abc`),
	c(`abc)`),
	c(`(a))(`),
	c(`((a)`),
	c(`(`),
	c(`)`),
	c(`x(?:`),

	// Repetition.
	c(`^a{2}$`, "aa", "a", "aaa"),
	c(`^a{2,}$`, "aaaa", "a"),
	c(`^a{2,3}$`, "aaa", "aaaa"),
	c(`^a{0}b$`, "b", "ab"),
	c(`^(?:ab){2}?$`, "abab"),
	c(`^a{,5}$`, "a{,5}", "aaa"),
	c(`^a{$`, "a{"),
	c(`^a{x}$`, "a{x}"),
	c(`^a{01}$`, "a{01}", "a"),
	c(`^a{1,2$`, "a{1,2"),
	c(`^a{1,02}$`, "a{1,02}", "a"),
	c(`^{}$`, "{}"),
	c(`^}$`, "}"),
	c(`{2}`),
	c(`a{2,1}`),
	c(`a{1001}`),
	c(`a{1000}`, strings.Repeat("a", 1000), strings.Repeat("a", 999)),
	c(`a{1000,}`, strings.Repeat("a", 1000)),
	c(`a{0,1001}`),
	c(`a{100000000}`),
	c(`a{99999999}`),
	c(`(a{500}){2}`, strings.Repeat("a", 1000)),
	c(`(a{500}){3}`),
	c(`(a{500}){3}?`),
	c(`(a{2}){501}`),
	c(`((a{10}){10}){10}`, strings.Repeat("a", 1000)),
	c(`((a{10}){10}){11}`),
	c(`(a{0}){1000}`, ""),
	c(`(a{2,}){500}`, strings.Repeat("a", 1000)),
	c(`(a{2,}){501}`),
	c(`(a*){1000}`, ""),
	c(`(a{1000}b|c){1}`, "c"),
	c(`a**`),
	c(`a*?*`),
	c(`a+?`, "a"),
	c(`a??`, ""),
	c(`a{2}{3}`),
	c(`a*{2}`),
	c(`a{2}*`),
	c(`a*{x`, "a{x"),
	c(`**`),
	c(`*?`),
	c(`+`),
	c(`?a`),
	c(`(*)`),
	c(`a|*`),
	c(`(?i)+`),
	c(`^(a*)*$`, "aaaa", "aab"),
	c(`^(a|b?)+$`, "abab", "abc"),
	c(`^(?:a+|b+)*c`, "aabbc", "aab"),

	// Escapes.
	c(`^a\.b$`, "a.b", "axb"),
	c(`\x41\x{42}\x{1F600}`, "AB😀"),
	c(`\x4`),
	c(`\x`),
	c(`\xZZ`),
	c(`\x{}`),
	c(`\x{4z}`),
	c(`\x{110000}`),
	c(`\x{10FFFF}`, "\U0010ffff"),
	c(`\x{D800}`, "a", "\ufffd"),
	c(`[\x{D7FF}-\x{E000}]`, "\ud7ff", "\ue000", "a"),
	c(`\101\0\12`, "A\x00\n"),
	c(`\400\777`, "\u0100\u01ff"),
	c(`\1`),
	c(`\18`),
	c(`(a)\1`),
	c(`\8`),
	c(`\a\f\t\n\r\v`, "\a\f\t\n\r\v"),
	c(`\b\B`, "a", ""),
	c(`\q`),
	c(`\C`),
	c(`\Z`),
	c(`\e`),
	c(`\u0041`),
	c(`\N{LATIN SMALL LETTER A}`),
	c(`\é`),
	c(`a\`),
	c(`\<a\>`, "<a>", "a"),
	c(`\_\ \-\#\&\~\%\/\"\'\!\@\=\:\;\,\}\{\]\[`, "_ -#&~%/\"'!@=:;,}{]["),
	c(`\Qa.b\E$`, "a.b", "axb"),
	c(`\Q.*`, ".*", "ab"),
	c(`\Qab\E+$`, "abbb", "abab"),
	c(`\Q\E*`),
	c(`a*\Q\E*`, "aa"),
	c(`(?i)\Qab\E`, "AB"),

	// Character classes: Go reads [, &&, -- and ~~ literally; ranges, escapes, errors.
	c(`[[]`, "[", "a"),
	c(`[a[b]]`, "a]", "b]", "[]", "a"),
	c(`[a&&b]`, "&", "a", "c"),
	c(`[a~~b]`, "~", "c"),
	c(`[a--b]`),
	c(`[--/]`, "-", ".", "a"),
	c(`[a-]`, "-", "a", "b"),
	c(`[-a]`, "-"),
	c(`[a-b-c]`, "-", "c", "d"),
	c(`[\d-z]`, "-", "5", "y"),
	c(`[a-\d]`),
	c(`[z-a]`),
	c(`[]a]`, "]", "a", "b"),
	c(`[^]a]`, "]", "b"),
	c(`[]`),
	c(`[^]`),
	c(`[abc`),
	c(`x[abc`),
	c(`([abc)`),
	c(`[a\`),
	c(`[\Q]`),
	c(`[\b]`),
	c(`[\x{61}-\x{63}]`, "b", "d"),
	c(`[\^\]\\\-]`, "^", "]", "\\", "-", "a"),
	c(`[^\n]`, "\n", "a"),
	c(`[.]`, ".", "a"),
	c(`[$^]`, "$", "^", "a"),
	c(`[é-ë]`, "ê", "e"),
	c(`[\p{Lu}&&[^A-Z]]`, "É]", "&]", "É", "A"),
}

func main() {
	// Go's limits on nesting and size, on generated patterns.
	limits := []testCase{
		c(strings.Repeat("(", 998)+"a"+strings.Repeat(")", 998), "a"),
		c(strings.Repeat("(", 999)+"a"+strings.Repeat(")", 999), "a"),
		c(strings.Repeat("(", 1000) + "a" + strings.Repeat(")", 1000)),
		c(strings.Repeat("(?:", 1500)+"a"+strings.Repeat(")", 1500), "a"),
		c(strings.Repeat("(?:b|", 1500)+"a"+strings.Repeat(")", 1500), "a", "c"),
		c(strings.Repeat("(b|", 500)+"a"+strings.Repeat(")", 500), "a", "c"),
		c(strings.Repeat("(b|", 501) + "a" + strings.Repeat(")", 501)),
		c(strings.Repeat("(", 499)+"a"+strings.Repeat(")*", 499), "a", "b"),
		c(strings.Repeat("(", 500) + "a" + strings.Repeat(")*", 500)),
		c(strings.Repeat(".{1000}", 3356)),
	}
	var results []result
	for _, tc := range append(cases, limits...) {
		r := result{Pattern: tc.Pattern}
		re, err := regexp.Compile(tc.Pattern)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Texts = tc.Texts
			for _, text := range tc.Texts {
				r.Matches = append(r.Matches, re.MatchString(text))
			}
		}
		results = append(results, r)
	}
	// One case per line, so that a change shows as a readable diff.
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "{\n\"categories\": %s,\n\"scripts\": %s,\n\"cases\": [\n", marshal(sortedKeys(unicode.Categories)), marshal(sortedKeys(unicode.Scripts)))
	for i, r := range results {
		separator := ","
		if i == len(results)-1 {
			separator = ""
		}
		fmt.Fprintf(out, "%s%s\n", marshal(r), separator)
	}
	fmt.Fprint(out, "]}\n")
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func marshal(value any) []byte {
	var buffer bytes.Buffer
	encoder := json.NewEncoder(&buffer)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buffer.Bytes(), []byte("\n"))
}

func sortedKeys(tables map[string]*unicode.RangeTable) []string {
	var names []string
	for name := range tables {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
