package tts

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

// mp3Audio is two silent MPEG-1 Layer III frames: 128 kbit/s, 44.1 kHz,
// 417 bytes each (144·128000/44100), header FF FB 90 64 and zeroed side
// information and data.
func mp3Audio() []byte {
	frame := make([]byte, 417)
	copy(frame, []byte{0xFF, 0xFB, 0x90, 0x64})
	return append(frame, frame...)
}

// wavAudio is 10 ms of 16-bit mono silence at 24 kHz in a RIFF WAVE file.
func wavAudio() []byte {
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

// opusAudio is an Ogg Opus stream (RFC 7845): the OpusHead and OpusTags
// pages, then one 20 ms packet whose single frame is empty (RFC 6716
// §3.2.1: a zero-length frame, silence).
func opusAudio() []byte {
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
	return append(out, oggPage(0x04, 960, 2, []byte{0xF8})...)
}

// audioOf is what a provider answers for a format and its MIME type.
func audioOf(format string) ([]byte, string) {
	switch {
	case strings.HasPrefix(format, "opus"):
		return opusAudio(), "audio/ogg"
	case format == "wav":
		return wavAudio(), "audio/wav"
	}
	return mp3Audio(), "audio/mpeg"
}

// seen is one request a fake provider got.
type seen struct {
	method, path, query string
	header              http.Header
	body                map[string]any
}

// fakeAPI is a loopback speech API: OpenAI's POST /v1/audio/speech and
// ElevenLabs' POST /v1/text-to-speech/{voice_id}, answering with real
// audio of the format asked for, unless answer says otherwise.
type fakeAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
	// answer, when set, replies instead of the audio.
	answer func(w http.ResponseWriter, r *http.Request) bool
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	s := seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()}
	if err := json.Unmarshal(raw, &s.body); err != nil {
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
		format, _ = s.body["response_format"].(string)
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
	data, mt := audioOf(format)
	w.Header().Set("Content-Type", mt)
	w.Write(data)
}

func (f *fakeAPI) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.got...)
}
