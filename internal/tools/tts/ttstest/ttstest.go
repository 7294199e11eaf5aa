// Package ttstest is a loopback fake of the speech APIs the tts tool
// speaks (OpenAI's /v1/audio/speech, ElevenLabs' /v1/text-to-speech),
// and real audio bytes of each format it asks for, for the tool's tests
// and end-to-end tests through a chat.
package ttstest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Real audio bytes of each format, built as the formats define them, so
// that the tool's check of what came back can fail.

// MP3 is two silent MPEG-1 Layer III frames: 128 kbit/s, 44.1 kHz,
// 417 bytes each (144·128000/44100), header FF FB 90 64 and zeroed side
// information and data.
func MP3() []byte {
	frame := make([]byte, 417)
	copy(frame, []byte{0xFF, 0xFB, 0x90, 0x64})
	return append(frame, frame...)
}

// WAV is 10 ms of 16-bit mono silence at 24 kHz in a RIFF WAVE file.
func WAV() []byte {
	const rate, samples = 24000, 240
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples*2))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(rate))
	le(uint32(rate * 2))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(samples * 2))
	b.Write(make([]byte, samples*2))
	return b.Bytes()
}

// oggCRC is the Ogg page checksum: CRC-32, polynomial 0x04c11db7, not
// reflected, initial value 0.
var oggCRC = func() *[256]uint32 {
	var t [256]uint32
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return &t
}()

// oggPage is one Ogg page holding one packet under 255 bytes.
func oggPage(flags byte, granule uint64, seq uint32, packet []byte) []byte {
	var b bytes.Buffer
	b.WriteString("OggS")
	b.WriteByte(0)
	b.WriteByte(flags)
	_ = binary.Write(&b, binary.LittleEndian, granule)
	_ = binary.Write(&b, binary.LittleEndian, uint32(0x7a1b)) // stream serial
	_ = binary.Write(&b, binary.LittleEndian, seq)
	_ = binary.Write(&b, binary.LittleEndian, uint32(0)) // checksum, set below
	b.WriteByte(1)
	b.WriteByte(byte(len(packet)))
	b.Write(packet)
	page := b.Bytes()
	var crc uint32
	for _, c := range page {
		crc = crc<<8 ^ oggCRC[byte(crc>>24)^c]
	}
	binary.LittleEndian.PutUint32(page[22:], crc)
	return page
}

// Opus is an Ogg Opus stream (RFC 7845) of one 20 ms packet of silence.
func Opus() []byte { return OpusLasting(1) }

// OpusLasting is an Ogg Opus stream (RFC 7845) of n 20 ms packets, one
// a page: the OpusHead and OpusTags pages, then packets whose single
// frame is empty (RFC 6716 §3.2.1: a zero-length frame, silence). It
// plays n·20 ms less the 312-sample pre-skip.
func OpusLasting(n int) []byte {
	head := []byte("OpusHead")
	head = append(head, 1, 1)                          // version, one channel
	head = binary.LittleEndian.AppendUint16(head, 312) // pre-skip
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0) // gain, mapping family 0
	tags := []byte("OpusTags")
	tags = binary.LittleEndian.AppendUint32(tags, 5)
	tags = append(tags, "talon"...)
	tags = binary.LittleEndian.AppendUint32(tags, 0)
	out := oggPage(0x02, 0, 0, head)
	out = append(out, oggPage(0, 0, 1, tags)...)
	for i := range max(n, 1) {
		var flags byte
		if i == max(n, 1)-1 {
			flags = 0x04 // end of stream
		}
		// The granule position counts the samples decoded so far,
		// pre-skip included (RFC 7845 §4).
		out = append(out, oggPage(flags, uint64(i+1)*960, uint32(i+2), []byte{0xF8})...)
	}
	return out
}

// AudioOf is what a provider answers for a format and its MIME type.
func AudioOf(format string) ([]byte, string) {
	switch {
	case strings.HasPrefix(format, "opus"):
		return Opus(), "audio/ogg"
	case format == "wav":
		return WAV(), "audio/wav"
	}
	return MP3(), "audio/mpeg"
}

// Request is one request the fake got.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                map[string]any
}

// Server is a loopback speech API: OpenAI's POST /v1/audio/speech and
// ElevenLabs' POST /v1/text-to-speech/{voice_id}, answering with real
// audio of the format asked for (response_format, output_format),
// unless Answer says otherwise. A request without its key header is
// refused 401 with the provider's own error body.
type Server struct {
	URL string // the server's root; OpenAI's baseUrl is URL+"/v1"
	srv *httptest.Server
	mu  sync.Mutex
	got []Request
	// answer, when set, replies instead of the audio.
	answer func(w http.ResponseWriter, r *http.Request) bool
}

// Start runs a Server until the test ends.
func Start(t testing.TB) *Server {
	f := &Server{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

// Answer makes fn answer the requests from now on (after they are
// recorded); fn returns false to let the fake answer with audio.
func (f *Server) Answer(fn func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = fn
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	s := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
	if err := json.Unmarshal(raw, &s.Body); err != nil {
		http.Error(w, `{"error":{"message":"body is not JSON"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.got = append(f.got, s)
	answer := f.answer
	f.mu.Unlock()
	if answer != nil && answer(w, r) {
		return
	}
	var format string
	switch {
	case r.Method != http.MethodPost:
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	case r.URL.Path == "/v1/audio/speech":
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"You didn't provide an API key.","type":"invalid_request_error"}}`)
			return
		}
		format, _ = s.Body["response_format"].(string)
	case strings.HasPrefix(r.URL.Path, "/v1/text-to-speech/"):
		if r.Header.Get("xi-api-key") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"detail":{"status":"needs_authorization","message":"Neither authorization header nor xi-api-key received."}}`)
			return
		}
		format = r.URL.Query().Get("output_format")
	default:
		http.NotFound(w, r)
		return
	}
	data, mt := AudioOf(format)
	w.Header().Set("Content-Type", mt)
	w.Write(data)
}

// Requests are the requests the fake got, in order.
func (f *Server) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.got...)
}
