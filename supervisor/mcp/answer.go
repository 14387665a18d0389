package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor"
	"capsule/supervisor/mcp/toolcall"
)

// answerEnvelope is what an answer's encoding may add around the tool
// result: the JSON-RPC response's members, the _meta with the server's
// identity that protocol 2026-07-28 adds to every result (its icon is a
// data URI of about 1 KiB), and an event stream's framing over HTTP. The
// request's id comes on top.
const answerEnvelope = 8 << 10

// limitReserve is room kept for the answer limit's error message, which
// is written once the answer is fitted, twice (text and structured
// content).
const limitReserve = 2 << 10

// toolAnswer is the tool result of a call's answer: fitted within max
// bytes as the transport encodes it, with the files sent as content after
// the text (through call, when the transport split the request).
func toolAnswer(a *supervisor.Answer, call *toolcall.Call, max int64) *mcpgo.CallToolResult {
	idLen := 0
	if call != nil {
		idLen = len(call.ID)
	}
	fit(a, max, idLen)
	res := toolResult(a)
	res.Content = append(res.Content, fileContents(a, call)...)
	return res
}

// toolResult is the MCP tool result of the answer, without the files'
// contents (fileContents adds them). A call refused before it ran (its
// arguments, a limit) gets one too: an error with the same
// structuredContent as any other answer, as the output schema promises.
func toolResult(a *supervisor.Answer) *mcpgo.CallToolResult {
	res := mcpgo.NewToolResultStructured(a, a.Text())
	res.IsError = a.IsError()
	return res
}

// encodedSize is at least the size of the answer's tool result as JSON,
// without the files' contents, and seldom more by more than a few bytes.
// The long texts are not encoded: each is counted at its escaped length
// (jsonStringLen), twice, and the rest of the result, encoded with a
// one-character stand-in for each, so that the text content keeps its
// sections. Encoding megabytes of escaped output for each measurement
// would cost a pathological answer half a second of CPU.
func encodedSize(a *supervisor.Answer) int64 {
	texts := texts(a)
	saved := make([]string, len(texts))
	var long int64
	for i, t := range texts {
		saved[i] = *t
		if *t != "" {
			long += 2 * (jsonStringLen([]byte(*t)) - 2 - 1)
			*t = "x"
		}
	}
	b, err := json.Marshal(toolResult(a))
	for i, t := range texts {
		*t = saved[i]
	}
	if err != nil {
		return 0 // cannot happen: the answer is made of strings and JSON the worker's frames were checked to hold
	}
	return int64(len(b)) + long
}

// roughSize bounds the answer's encoded size from above without encoding
// it: each character of text at its most expensive escape (6 bytes), each
// text shown twice (text and structured content), the files at theirs.
// Most answers are far below the limit, and need no more than this.
func roughSize(a *supervisor.Answer) int64 {
	n := int64(4 << 10)
	for _, s := range texts(a) {
		n += 12 * int64(len(*s))
	}
	n += int64(len(a.Result))
	if a.Error != nil {
		n += 12 * int64(len(a.Error.Type)+len(a.Error.Message))
	}
	for i, f := range a.Returned.Files {
		n += 12*int64(len(f.Path)) + 256
		if !f.Truncated {
			n += contentSize(a, i)
		}
	}
	return n
}

// texts are the answer's long texts, the ones fit may cut: each is shown
// in the text content and in the structured content.
func texts(a *supervisor.Answer) []*string {
	t := []*string{&a.Stdout, &a.Stderr}
	if a.ResultRepr != nil {
		t = append(t, a.ResultRepr)
	}
	if a.Error != nil {
		t = append(t, &a.Error.Traceback)
	}
	return t
}

// fit keeps the whole answer, as the transport will encode it (the text,
// the structured content and the files sent, base64 or escaped text, and
// an envelope with an id of idLen bytes), within max bytes. Output comes
// first: a file that does not fit in what is left is listed with
// truncated: true and not sent, in path order, the next smaller one still
// taking the room left. Only when the output alone is over does it cut
// the longest of stdout, stderr, the result's repr and the traceback,
// from the end, as the output limit does. What was cut or left out is
// named in the answer: limit "answer" (unless another limit was hit
// first) and an error that says what and which flag raises it.
func fit(a *supervisor.Answer, max int64, idLen int) {
	budget := max - answerEnvelope - int64(idLen)
	if roughSize(a) <= budget {
		return
	}
	budget -= limitReserve
	var sendable []int
	for i, f := range a.Returned.Files {
		if !f.Truncated {
			sendable = append(sendable, i)
			withhold(a, i, true)
		}
	}
	var cuts []string
	size := encodedSize(a)
	for round := 0; size > budget && round < 16; round++ {
		cut := cutText(a, size-budget, round == 15)
		if cut == "" {
			break
		}
		if !slices.Contains(cuts, cut) {
			cuts = append(cuts, cut)
		}
		size = encodedSize(a)
	}
	room := budget - size
	withheld := 0
	for _, i := range sendable {
		if c := contentSize(a, i) + 1; c <= room {
			room -= c
			withhold(a, i, false)
		} else {
			withheld++
		}
	}
	if withheld == 0 && len(cuts) == 0 {
		return
	}
	if withheld > 0 {
		cuts = append(cuts, supervisor.Count(int64(withheld), "file was", "files were")+" not sent (listed with truncated: true)")
	}
	msg := fmt.Sprintf("answer: the answer would have been over the limit of %s of encoded JSON per answer (--max-answer); %s",
		runtimes.FormatBytes(max), strings.Join(cuts, "; "))
	if a.Limit == nil {
		l := runtimes.LimitAnswer
		a.Limit = &l
	}
	if *a.Limit == runtimes.LimitAnswer && a.Error == nil {
		a.Error = &runtimes.ErrorInfo{Type: "AnswerLimitError", Message: msg}
		return
	}
	// Another limit was hit first and keeps the error; the text still
	// says what the answer limit took.
	a.AnswerNote = msg
}

// withhold marks file i as not sent, or as sent again, for the answer
// limit.
func withhold(a *supervisor.Answer, i int, over bool) {
	a.Returned.Files[i].Truncated = over
	a.Files[i].Truncated = over
	if a.Returned.OverAnswer == nil {
		a.Returned.OverAnswer = make([]bool, len(a.Returned.Files))
	}
	a.Returned.OverAnswer[i] = over
}

// cutText cuts at least excess bytes of encoded JSON from the answer's
// texts, each of which is encoded twice, and says what it cut; "" when
// there is nothing left to cut. It cuts the longest texts to one length,
// so that a long stderr does not leave stdout empty, or the other way
// round. last cuts every text and drops the result, whatever that
// leaves.
func cutText(a *supervisor.Answer, excess int64, last bool) string {
	if last {
		cutStream(a, &a.Stdout, &a.StdoutDropped, len(a.Stdout))
		cutStream(a, &a.Stderr, &a.StderrDropped, len(a.Stderr))
		for _, t := range texts(a)[2:] {
			*t = ""
		}
		a.Result = json.RawMessage("null")
		return "the output, the result and the traceback were left out"
	}
	texts := texts(a)
	costs := make([]int64, len(texts))
	var total, longest int64
	for i, t := range texts {
		costs[i] = jsonStringLen([]byte(*t)) - 2
		total += costs[i]
		longest = max(longest, costs[i])
	}
	if longest == 0 {
		if len(a.Result) > len("null") {
			a.Result = json.RawMessage("null")
			return "the result was left out (result_repr shows it)"
		}
		return ""
	}
	// The level: the longest each text may stay for the texts, shown
	// twice, to shed excess (and a little more, for the lines that say
	// what was dropped).
	want := total - (excess+1)/2 - 512
	lo, hi := int64(0), longest
	for lo < hi {
		mid := (lo + hi + 1) / 2
		var kept int64
		for _, c := range costs {
			kept += min(c, mid)
		}
		if kept <= want {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	var cut []string
	for i, t := range texts {
		if costs[i] <= lo {
			continue
		}
		keep := keepWithin(*t, lo)
		switch t {
		case &a.Stdout:
			cutStream(a, &a.Stdout, &a.StdoutDropped, len(a.Stdout)-keep)
			cut = append(cut, "stdout")
		case &a.Stderr:
			cutStream(a, &a.Stderr, &a.StderrDropped, len(a.Stderr)-keep)
			cut = append(cut, "stderr")
		case a.ResultRepr:
			*a.ResultRepr = (*a.ResultRepr)[:keep] + "…"
			cut = append(cut, "the result's repr")
		default:
			a.Error.Traceback = a.Error.Traceback[:keep] + "…"
			cut = append(cut, "the traceback")
		}
	}
	return strings.Join(cut, ", ") + " cut"
}

// cutStream drops the last n bytes of a stream's text, counting them as
// the output limit counts what it drops.
func cutStream(a *supervisor.Answer, text *string, dropped *int64, n int) {
	if n <= 0 {
		return
	}
	*text = (*text)[:len(*text)-n]
	*dropped += int64(n)
	a.StdoutTruncated = a.StdoutDropped > 0
	a.StderrTruncated = a.StderrDropped > 0
}

// keepWithin returns how many bytes of s, cut at a character boundary,
// encode within budget bytes of JSON string (without the quotes).
func keepWithin(s string, budget int64) int {
	var n int64
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if n += runeJSONLen(r, size); n > budget {
			return i
		}
		i += size
	}
	return len(s)
}

// jsonStringLen is the most bytes b takes as a JSON string, quotes
// included, encoded by encoding/json (which escapes <, > and &, U+2028
// and U+2029, and writes an invalid byte as \ufffd) or by
// toolcall.AppendString (which does none of these, and writes an invalid
// byte as U+FFFD).
func jsonStringLen(b []byte) int64 {
	n := int64(2)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		n += runeJSONLen(r, size)
		b = b[size:]
	}
	return n
}

// runeJSONLen is the most bytes r, size bytes of UTF-8 (an invalid byte
// is RuneError of size 1), takes in a JSON string.
func runeJSONLen(r rune, size int) int64 {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError && size == 1:
		return 6
	}
	return int64(size)
}

// contentSize is the encoded size of returned file i's content, as
// fileContents makes it: the content without its data, and the data's
// encoded length.
func contentSize(a *supervisor.Answer, i int) int64 {
	f := a.Returned.Files[i]
	b, _ := json.Marshal(fileContent(a, i, ""))
	if a.Returned.Kinds[i].Text {
		return int64(len(b)) + jsonStringLen(f.Data) - 2
	}
	return int64(len(b)) + int64(base64.StdEncoding.EncodedLen(len(f.Data)))
}

// fileContents is the MCP content of the files returned and sent, in path
// order, to follow the answer's text: PNG, JPEG, GIF and WebP images as
// image content, other files as embedded resources at
// file:///tmp/outputs/PATH, text (a text type in UTF-8) or blob. Through
// call, when the transport split the request, each file's content is a
// placeholder that the transport replaces, encoding the file once.
func fileContents(a *supervisor.Answer, call *toolcall.Call) []mcpgo.Content {
	var out []mcpgo.Content
	for i, f := range a.Returned.Files {
		if f.Truncated {
			continue
		}
		var data string
		if a.Returned.Kinds[i].Text {
			data = call.Text(f.Data)
		} else {
			data = call.Base64(f.Data)
		}
		out = append(out, fileContent(a, i, data))
	}
	return out
}

// fileContent is returned file i's content with data, its bytes as the
// content carries them (the text of a text file, base64 otherwise).
func fileContent(a *supervisor.Answer, i int, data string) mcpgo.Content {
	f, k := a.Returned.Files[i], a.Returned.Kinds[i]
	uri := (&url.URL{Scheme: "file", Path: "/tmp/" + fileset.OutputsDir + "/" + f.Path}).String()
	switch {
	case k.Image:
		return mcpgo.NewImageContent(data, k.MIME)
	case k.Text:
		return mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: uri, MIMEType: k.MIME, Text: data})
	}
	return mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: uri, MIMEType: k.MIME, Blob: data})
}
