package mcp

import (
	"encoding/base64"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The server's identity in initialize. There is no website: capsule is
// run from its repository and release archives, and a link to nowhere is
// worse than none.
const (
	serverTitle       = "Capsule"
	serverDescription = "Runs Python and JavaScript code in a fresh, locked-down sandbox for every call: no network, no host files, strict limits."
)

// pillSVG draws a capsule (a pill) in two colours; it stays small, so the
// data URIs below cost initialize and tools/list a few hundred bytes each.
const pillSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
	`<g transform="rotate(-45 16 16)">` +
	`<path d="M16 9H9a7 7 0 0 0 0 14h7z" fill="%s"/>` +
	`<path d="M16 9h7a7 7 0 0 1 0 14h-7z" fill="%s"/>` +
	`<rect x="2" y="9" width="28" height="14" rx="7" fill="none" stroke="#333" stroke-width="1.5"/>` +
	`</g></svg>`

// icon is a pill in two colours as an embedded SVG icon.
func icon(left, right string) mcpgo.Icon {
	svg := fmt.Sprintf(pillSVG, left, right)
	return mcpgo.Icon{
		Src:      "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg)),
		MIMEType: "image/svg+xml",
		Sizes:    []string{"any"},
	}
}

// serverIcon is the server's icon; each tool's is a pill in its
// language's colours (runtimes.Tool).
var serverIcon = icon("#5b8def", "#f2f2f2")

// instructions tell the model how to use the tools well, with the limits
// this server was started with.
func (s *tools) instructions() string {
	lim := s.cfg.Limits
	return fmt.Sprintf("Use execute_python or execute_javascript to compute, parse, transform or check data by running code, "+
		"rather than working it out by hand. Every call runs in a fresh sandbox: nothing is kept between calls "+
		"(no variables, no files, no imports), so pass earlier results back in through `inputs` (a JSON object the code "+
		"sees as the variable `inputs`) rather than pasting them into the code. The value of the code's last expression "+
		"comes back as the result (structuredContent.result as JSON where the value maps exactly, with result_type and "+
		"result_repr); print for anything else. There is no network and no package installation; Python has its standard "+
		"library, JavaScript has no Node or browser APIs. Limits per call: %s wall time by default (timeout_seconds up to %s), "+
		"%s memory, %s each of stdout and stderr, %d characters of code. When a call hits a limit, `limit` names it; "+
		"make the code do less per call rather than retrying it unchanged.",
		lim.Timeout, lim.MaxTimeout, lim.Memory, lim.MaxOutput, int64(lim.MaxCode))
}

// identity is the server options that say who the server is and how to
// use it.
func (s *tools) identity() []server.ServerOption {
	return []server.ServerOption{
		server.WithTitle(serverTitle),
		server.WithDescription(serverDescription),
		server.WithIcons(serverIcon),
		server.WithInstructions(s.instructions()),
	}
}
