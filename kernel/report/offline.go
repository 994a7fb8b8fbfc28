package report

import (
	"fmt"
	"html"
	"regexp"
	"strings"
)

// resourceAttrs lists, per HTML/SVG element, the attributes whose URL the
// browser fetches while showing the page. Links (<a href>) are navigation,
// not resources, and are allowed to point anywhere.
var resourceAttrs = map[string][]string{
	"script":  {"src", "href", "xlink:href"},
	"link":    {"href"},
	"img":     {"src", "srcset"},
	"iframe":  {"src"},
	"frame":   {"src"},
	"embed":   {"src"},
	"object":  {"data"},
	"source":  {"src", "srcset"},
	"track":   {"src"},
	"audio":   {"src"},
	"video":   {"src", "poster"},
	"input":   {"src"},
	"image":   {"href", "xlink:href"},
	"use":     {"href", "xlink:href"},
	"feimage": {"href", "xlink:href"},
	"body":    {"background"},
	"table":   {"background"},
	"td":      {"background"},
}

var (
	tagOpenRE   = regexp.MustCompile(`(?i)<([a-z][a-z0-9:-]*)\b((?:[^>"']|"[^"]*"|'[^']*')*)>`)
	attrRE      = regexp.MustCompile(`(?i)([a-z][a-z0-9:_-]*)\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+)`)
	cssRemoteRE = regexp.MustCompile(`(?i)(url\(\s*(?:['"]|&quot;|&#0*39;|&apos;)?|@import\s+(?:['"]|&quot;))\s*((?:https?:|ftp:)?//[^'")\s&]*)`)
)

// isRemote reports whether a URL would be fetched from the network.
func isRemote(u string) bool {
	u = strings.ToLower(strings.TrimSpace(html.UnescapeString(u)))
	return strings.HasPrefix(u, "http:") || strings.HasPrefix(u, "https:") ||
		strings.HasPrefix(u, "ftp:") || strings.HasPrefix(u, "//")
}

// remoteURLs returns the remote URLs of an attribute value (srcset holds a
// list of "URL width" candidates).
func remoteURLs(name, value string) []string {
	value = strings.Trim(value, `"'`)
	var out []string
	if strings.EqualFold(name, "srcset") {
		for _, cand := range strings.Split(value, ",") {
			if f := strings.Fields(cand); len(f) > 0 && isRemote(f[0]) {
				out = append(out, f[0])
			}
		}
		return out
	}
	if isRemote(value) {
		out = append(out, strings.TrimSpace(html.UnescapeString(value)))
	}
	return out
}

// RemoteResources lists every resource an HTML document would fetch from
// the network: remote src/href of script, link, img, iframe, media and SVG
// image/use elements, and remote url(...) or @import in CSS. Each entry
// reads "<tag attr=URL>" or "css URL". An offline report has none.
func RemoteResources(doc string) []string {
	var out []string
	for _, m := range tagOpenRE.FindAllStringSubmatch(doc, -1) {
		tag := strings.ToLower(m[1])
		for _, a := range attrRE.FindAllStringSubmatch(m[2], -1) {
			name := strings.ToLower(a[1])
			if name == "style" {
				for _, c := range cssRemoteRE.FindAllStringSubmatch(html.UnescapeString(a[2]), -1) {
					out = append(out, "css "+c[2])
				}
				continue
			}
			if !contains(resourceAttrs[tag], name) {
				continue
			}
			for _, u := range remoteURLs(name, a[2]) {
				out = append(out, fmt.Sprintf("<%s %s=%s>", tag, name, u))
			}
		}
	}
	for _, m := range styleBlockRE.FindAllStringSubmatch(doc, -1) {
		for _, c := range cssRemoteRE.FindAllStringSubmatch(m[1], -1) {
			out = append(out, "css "+c[2])
		}
	}
	return out
}

var styleBlockRE = regexp.MustCompile(`(?is)<style\b[^>]*>(.*?)</style\s*>`)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CheckOffline returns an error listing the remote resources of an HTML
// document, or nil when it needs no network.
func CheckOffline(doc string) error {
	if r := RemoteResources(doc); len(r) > 0 {
		return fmt.Errorf("HTML fetches %d remote resource(s), which an offline report must not: %s", len(r), strings.Join(r, ", "))
	}
	return nil
}

var remoteScriptRE = regexp.MustCompile(`(?is)<script\b((?:[^>"']|"[^"]*"|'[^']*')*)>.*?</script\s*>`)

// StripRemote removes from an HTML fragment (a cell output) what would be
// fetched from the network, and returns the cleaned fragment with the list
// of removed URLs. A removed element is replaced by a visible note, so a
// report shows that, say, a plotly chart needed a CDN.
func StripRemote(frag string) (string, []string) {
	var removed []string
	note := func(u string) string {
		removed = append(removed, u)
		e := html.EscapeString(u)
		return `<a class="gomase-removed" href="` + e + `">[remote resource left out of this offline report: ` + e + `]</a>`
	}
	// <script src=remote>...</script> as a whole.
	frag = remoteScriptRE.ReplaceAllStringFunc(frag, func(s string) string {
		m := remoteScriptRE.FindStringSubmatch(s)
		for _, a := range attrRE.FindAllStringSubmatch(m[1], -1) {
			if n := strings.ToLower(a[1]); n == "src" || n == "href" || n == "xlink:href" {
				if us := remoteURLs(n, a[2]); len(us) > 0 {
					return note(us[0])
				}
			}
		}
		return s
	})
	// Other elements with a remote resource attribute.
	frag = tagOpenRE.ReplaceAllStringFunc(frag, func(s string) string {
		m := tagOpenRE.FindStringSubmatch(s)
		tag := strings.ToLower(m[1])
		attrs := resourceAttrs[tag]
		for _, a := range attrRE.FindAllStringSubmatch(m[2], -1) {
			name := strings.ToLower(a[1])
			if !contains(attrs, name) {
				continue
			}
			if us := remoteURLs(name, a[2]); len(us) > 0 {
				return note(us[0])
			}
		}
		return s
	})
	// CSS url(remote) and @import "remote".
	frag = cssRemoteRE.ReplaceAllStringFunc(frag, func(s string) string {
		m := cssRemoteRE.FindStringSubmatch(s)
		removed = append(removed, m[2])
		return m[1] + "data:,"
	})
	return frag, removed
}
