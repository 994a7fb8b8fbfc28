package nbsource

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// notStandingAlone are phrases that point the student at things they
// cannot see (our write-ups of earlier runs, the reference text the labs
// were rebuilt from, its numbered items) or at our machines instead of
// theirs. Each is matched case-insensitively.
var notStandingAlone = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bseed 0\d\d\b`), "a write-up the student has never seen: say whose run it was (\"MASE's Tutorial 2 reports …\")"},
	{regexp.MustCompile(`(?i)\bthe seeds\b`), "write-ups the student has never seen: say whose run it was"},
	{regexp.MustCompile(`(?i)\bspec items?\b`), "a numbered item of a text the student has never seen: say the thing itself"},
	{regexp.MustCompile(`(?i)\bspec §`), "a section of a text the student has never seen: say the thing itself"},
	{regexp.MustCompile(`(?i)\bacceptance (cases? )?\d+`), "a numbered check of a text the student has never seen: name the test or say the figure"},
	{regexp.MustCompile(`(?i)mase-labs-spec`), "a file outside the repository the student never sees: say the thing itself"},
	{regexp.MustCompile(`(?i)\bspec pitfalls?\b`), "a list the student has never seen: say what MASE does (\"MASE's code has this bug: …\")"},
	{regexp.MustCompile(`(?i)\bpitfalls? \d+`), "a numbered item of a text the student has never seen: say what MASE does"},
	{regexp.MustCompile(`(?i)\b(two|2)( CPU)? cores\b`), "our machine, not the student's: say what this run measured, or where a figure was measured (docs/BENCHMARKS.md)"},
	{regexp.MustCompile(`(?i)\bdev-2core\b`), "our machine's name: it belongs in docs/BENCHMARKS.md only"},
	{regexp.MustCompile(`(?i)\ba busy machine\b`), "our machine, not the student's"},
	{regexp.MustCompile(`(?i)\bno GPU was lent\b`), "our machine, not the student's: say what runs on the student's backend"},
	{regexp.MustCompile(`(?i)\bour machines?\b`), "our machine, not the student's"},
}

// standAloneExempt are the files that record our measured runs, where the
// machine a figure came from must be named.
var standAloneExempt = map[string]bool{"docs/BENCHMARKS.md": true, "docs/GPU.md": true}

// standAloneFiles returns the files TestNotebookTextStandsAlone reads, by
// area, relative to the repository's root.
func standAloneFiles(t *testing.T) map[string][]string {
	t.Helper()
	areas := map[string][]string{}
	for area, globs := range map[string][]string{
		"notebooks": {"notebooks/src/*" + SourceExt, "notebooks/README.md", "notebooks/src/README.md"},
		"docs":      {"docs/*.md", "README.md"},
	} {
		for _, g := range globs {
			paths, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(g)))
			if err != nil || len(paths) == 0 {
				t.Fatalf("%s: no files (%v)", g, err)
			}
			for _, p := range paths {
				rel := filepath.ToSlash(must(filepath.Rel(repoRoot, p)))
				if !standAloneExempt[rel] {
					areas[area] = append(areas[area], rel)
				}
			}
		}
		sort.Strings(areas[area])
	}
	return areas
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// phraseHits returns one line per forbidden phrase in the file:
// "path:line: "phrase" (why)".
func phraseHits(rel string, text string) []string {
	var hits []string
	for i, line := range strings.Split(text, "\n") {
		for _, p := range notStandingAlone {
			for _, m := range p.re.FindAllString(line, -1) {
				hits = append(hits, fmt.Sprintf("%s:%d: %q (%s)", rel, i+1, m, p.why))
			}
		}
	}
	return hits
}

// TestNotebookTextStandsAlone: the notebooks and the docs speak to the
// student about the student's run. They cite no write-up of ours, no item
// of the reference the labs were rebuilt from and none of our machines
// (docs/BENCHMARKS.md and docs/GPU.md, the records of our measured runs,
// excepted). Run one area with -run 'TestNotebookTextStandsAlone/docs'.
func TestNotebookTextStandsAlone(t *testing.T) {
	for area, files := range standAloneFiles(t) {
		t.Run(area, func(t *testing.T) {
			for _, rel := range files {
				text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range phraseHits(rel, string(text)) {
					t.Error(h)
				}
			}
		})
	}
}

func TestPhraseHits(t *testing.T) {
	text := "fine\nas seed 002 found, The seeds agree\nspec §9 item 40; acceptance 21 and spec pitfall 4 (pitfall 7)\n" +
		"on two CPU cores, 2 cores or Two cores; dev-2core, a busy machine, no GPU was lent, on our machines\n" +
		"seed 42, the seedsman, a 128-core machine, acceptance tests, pitfalls of MASE\n"
	got := phraseHits("x.md", text)
	want := []string{`x.md:2: "seed 002"`, `x.md:2: "The seeds"`, `x.md:3: "spec §"`, `x.md:3: "acceptance 21"`,
		`x.md:3: "spec pitfall"`, `x.md:3: "pitfall 4"`, `x.md:3: "pitfall 7"`, `x.md:4: "two CPU cores"`, `x.md:4: "2 cores"`,
		`x.md:4: "Two cores"`, `x.md:4: "dev-2core"`, `x.md:4: "a busy machine"`, `x.md:4: "no GPU was lent"`, `x.md:4: "our machines"`}
	if len(got) != len(want) {
		t.Fatalf("hits:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+" (") {
			t.Errorf("hit %d = %s, want %s (…)", i, got[i], want[i])
		}
	}
}

// markdownFiles returns the repository's Markdown files (test data, hidden
// and generated folders left out), relative to the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "reports" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			out = append(out, filepath.ToSlash(must(filepath.Rel(repoRoot, p))))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var (
	fenceRE     = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpanRE  = regexp.MustCompile("`+[^`]*`+")
	mdLinkRE    = regexp.MustCompile(`!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlLinkRE  = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"`)
	htmlIDRE    = regexp.MustCompile(`(?i)<a\s[^>]*?(?:id|name)="([^"]+)"`)
	headingRE   = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	emphasisRE  = regexp.MustCompile(`(\*\*|__|\*)`)
	htmlTagRE   = regexp.MustCompile(`<[^>]+>`)
	externalURL = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// mdLink is one link of a Markdown file.
type mdLink struct {
	line   int
	target string
}

// parseMarkdown returns a file's links (outside code) and its anchors:
// GitHub's heading ids and explicit <a id/name> anchors.
func parseMarkdown(text string) (links []mdLink, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			slug := headingSlug(m[2])
			if n := seen[slug]; n > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		prose := codeSpanRE.ReplaceAllString(line, "")
		for _, m := range mdLinkRE.FindAllStringSubmatch(prose, -1) {
			links = append(links, mdLink{i + 1, m[2]})
		}
		for _, m := range htmlLinkRE.FindAllStringSubmatch(prose, -1) {
			links = append(links, mdLink{i + 1, m[1]})
		}
	}
	return links, anchors
}

// headingSlug is the id GitHub gives a heading: its text as rendered
// (code marks, emphasis, link targets and HTML tags dropped), lower-cased,
// with every character but letters, digits, "_", "-" and spaces removed and
// spaces turned into "-".
func headingSlug(heading string) string {
	s := inlineLink.ReplaceAllString(heading, "$1")
	s = strings.ReplaceAll(s, "`", "")
	s = htmlTagRE.ReplaceAllString(s, "")
	s = emphasisRE.ReplaceAllString(s, "")
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinksResolve: every relative link of the repository's Markdown
// files names a file or folder that exists, and every #anchor one of the
// target file's headings (as GitHub makes their ids) or explicit anchors.
func TestDocLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	anchorsOf := map[string]map[string]bool{}
	linksOf := map[string][]mdLink{}
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		linksOf[rel], anchorsOf[rel] = parseMarkdown(string(text))
	}
	checked := 0
	for _, rel := range files {
		for _, l := range linksOf[rel] {
			if externalURL.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(l.target, "#")
			target := rel
			if path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), filepath.FromSlash(path))))
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(target))); err != nil {
					t.Errorf("%s:%d: link %q: no file %s", rel, l.line, l.target, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			anchors, ok := anchorsOf[target]
			if !ok {
				continue // an anchor into a file that is not Markdown
			}
			if !anchors[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with the id #%s", rel, l.line, l.target, target, anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative links found: the parser is broken")
	}
}

func TestHeadingSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Lab 1 — quantization and pruning (Tutorials 3 and 4, Tasks 1 and 2)": "lab-1--quantization-and-pruning-tutorials-3-and-4-tasks-1-and-2",
		"Where gomase differs from MASE, and why":                             "where-gomase-differs-from-mase-and-why",
		"`mase search export`: Optuna's **journal**":                          "mase-search-export-optunas-journal",
		"D2 · Quick mode trains on SST-2":                                     "d2--quick-mode-trains-on-sst-2",
		"A [link](x.md) and snake_case":                                       "a-link-and-snake_case",
	} {
		if got := headingSlug(in); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", in, got, want)
		}
	}
	_, anchors := parseMarkdown("# Results\n\n```\n# not a heading\n```\n## Results\n<a id=\"here\"></a>\n")
	for _, a := range []string{"results", "results-1", "here"} {
		if !anchors[a] {
			t.Errorf("anchors %v lack %s", anchors, a)
		}
	}
	if anchors["not-a-heading"] {
		t.Error("a fenced line counted as a heading")
	}
}
