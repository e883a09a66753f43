package dataset

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
)

// Content kinds of generated files. Each has its own generator whose deflate ratio was
// tuned (see TestContentRatios) to resemble the corresponding files of a Debian rootfs.
const (
	contentText       uint8 = iota // configs, docs, scripts: ratio ~0.3
	contentBinary                  // ELF-like executables, libraries, .mo catalogues: ratio ~0.5
	contentCompressed              // .gz, .png, .jpg: random after a magic header, ratio ~1.0
)

// vocab is the "language" of text files: pseudo-words drawn with a Zipf-like frequency, as
// words are in real text. A fixed vocabulary (not derived from Spec.Seed) is enough: seeds
// change which words appear where, not what the words are.
type vocab struct {
	// words are stored in fixed 16-byte slots so that appending one is two 8-byte moves
	// instead of a memmove call: this is the inner loop of text generation.
	words [][16]byte
	lens  []uint8
	// pick maps 16 random bits to a word index; word i occupies a number of slots
	// proportional to 1/(i+2.7)^zipfS, so picking a word costs one table load.
	pick [1 << 16]uint16
	// stock lines: boilerplate (license paragraphs, common config lines, shell idioms) that
	// real text repeats verbatim within a file; stockPick skews the choice to a few of them.
	stock     [][]byte
	stockPick [1 << 10]uint8
}

const zipfS = 1.1

var (
	vocabOnce sync.Once
	theVocab  *vocab
)

func getVocab() *vocab {
	vocabOnce.Do(func() { theVocab = buildVocab() })
	return theVocab
}

// Words that dominate configs, scripts and docs; they get the highest ranks.
var commonWords = []string{
	"the", "of", "and", "to", "a", "in", "is", "for", "=", "#", "if", "then", "fi", "{", "}",
	"return", "be", "this", "on", "not", "with", "file", "that", "by", "or", "are", "as", "it",
	"/usr/lib", "/etc", "true", "false", "0", "1", "echo", "$1", "else", "from", "default",
	"set", "can", "you", "use", "will", "see", "option", "value", "may", "no", "yes", "all",
	"local", "do", "done", "case", "esac", "exit", "name", "path", "type", "int", "char",
	"const", "struct", "NULL", "self", "def", "import", "license", "GNU", "General", "Public",
	"software", "copyright", "version", "Debian", "package", "without", "under", "any",
}

var syllables = []string{
	"ba", "be", "bi", "bo", "ca", "ce", "co", "cu", "da", "de", "di", "do", "fa", "fe", "fi",
	"ga", "ge", "go", "ha", "he", "hi", "ja", "ka", "ke", "ki", "la", "le", "li", "lo", "lu",
	"ma", "me", "mi", "mo", "mu", "na", "ne", "ni", "no", "nu", "pa", "pe", "pi", "po", "ra",
	"re", "ri", "ro", "ru", "sa", "se", "si", "so", "su", "ta", "te", "ti", "to", "tu", "va",
	"ve", "vi", "xa", "ze", "st", "tr", "pr", "ch", "th", "ng", "nt", "rs", "ck", "ion", "er",
	"al", "en", "an", "or", "ed", "ing", "ly", "ex", "un",
}

const vocabSize = 4000

func buildVocab() *vocab {
	r := rand.New(rand.NewPCG(0x766f636162, 1))
	v := &vocab{}
	seen := make(map[string]bool, vocabSize)
	add := func(w string) {
		var slot [16]byte
		v.lens = append(v.lens, uint8(copy(slot[:], w)))
		v.words = append(v.words, slot)
		seen[w] = true
	}
	for _, w := range commonWords {
		add(w)
	}
	for len(v.words) < vocabSize {
		k := 1 + r.IntN(3) + r.IntN(2)
		var b []byte
		for range k {
			b = append(b, syllables[r.IntN(len(syllables))]...)
		}
		if r.IntN(12) == 0 {
			b[0] -= 'a' - 'A'
		}
		if w := string(b); len(w) < 16 && !seen[w] {
			add(w)
		}
	}
	// Fill the pick table by cumulative Zipf weight.
	var total float64
	for i := range v.words {
		total += math.Pow(float64(i)+2.7, -zipfS)
	}
	var cum float64
	slot := 0
	for i := range v.words {
		cum += math.Pow(float64(i)+2.7, -zipfS)
		end := int(math.Round(cum / total * float64(len(v.pick))))
		for ; slot < end && slot < len(v.pick); slot++ {
			v.pick[slot] = uint16(i)
		}
	}
	for ; slot < len(v.pick); slot++ {
		v.pick[slot] = uint16(len(v.words) - 1)
	}
	var g textGen
	g.rng.Seed(0x73746f636b, 3)
	g.v = v // not reset(): that would re-enter vocabOnce
	for range 256 {
		n := g.genLine()
		v.stock = append(v.stock, bytes.TrimLeft(bytes.Clone(g.line[:n]), " "))
	}
	for i := range v.stockPick {
		v.stockPick[i] = uint8(255 * math.Pow(float64(i)/float64(len(v.stockPick)), 2))
	}
	return v
}

// textGen produces text-like content: lines of Zipf-distributed words with indentation,
// punctuation and now and then a number or hex string (versions, checksums, addresses),
// which real configs and docs are full of and which keep deflate from doing unrealistically
// well. With nul set it produces NUL-separated strings, like an ELF string table.
type textGen struct {
	rng     rand.PCG
	v       *vocab
	nul     bool
	indent  int    // current indentation level (0-3), drifts like code blocks do
	pending []byte // the rest of the last generated line, not yet handed out
	line    [1024]byte
}

func (g *textGen) reset(seed1, seed2 uint64, nul bool) {
	g.rng.Seed(seed1, seed2)
	g.v = getVocab()
	g.nul = nul
	g.indent = 0
	g.pending = nil
}

// stockLines/16 of the lines are stock lines.
const stockLines = 5

const hexDigits = "0123456789abcdef"

// genLine generates one line into g.line and returns its length. The longest possible line
// (12 indentation + 12 tokens of at most 34 bytes + 2) fits in g.line with room for the
// 16-byte word stores. The random stream is drawn in a fixed order (the line's number, then
// one number per token and more for hex strings and punctuation), so a seed always makes
// the same text.
func (g *textGen) genLine() int {
	l := &g.line
	i := 0
	r := g.rng.Uint64()
	if !g.nul {
		i = g.indentLine(r)
	}
	if r>>60 < stockLines && g.v.stock != nil {
		st := g.v.stock[g.v.stockPick[r>>40&0x3ff]]
		return i + copy(l[i:], st)
	}
	nwords := 2 + int(r>>3&7) + int(r>>6&3) // 2..12, mean ~6.5
	special := r >> 8                       // bits for punctuation
	for w := 0; w < nwords; w++ {
		if w > 0 {
			if special&15 == 0 && !g.nul {
				l[i] = ','
				i++
			}
			l[i] = ' '
			i++
			special >>= 4
			if special == 0 {
				special = g.rng.Uint64() | 1<<63
			}
		}
		x := g.rng.Uint64()
		switch x >> 56 { // 8 bits: the token kind
		case 0, 1, 2, 3:
			i = g.number(i, x)
		case 4:
			i = g.hex(i, x)
		default:
			i, w = g.words(i, x, w, nwords)
		}
	}
	return g.endLine(i, special)
}

// indentLine writes the line's indentation, which drifts by at most one level per line, and
// returns its length.
func (g *textGen) indentLine(r uint64) int {
	switch r & 7 {
	case 0:
		if g.indent < 3 {
			g.indent++
		}
	case 1, 2:
		if g.indent > 0 {
			g.indent--
		}
	}
	*(*[16]byte)(g.line[0:]) = [16]byte{' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '}
	return g.indent * 4
}

// number writes a number such as 1.2.34 or 4096 at i, from x, and returns the new end.
func (g *textGen) number(i int, x uint64) int {
	l := &g.line
	n := x & 0xffff
	i += len(appendUint(l[i:i], n%1000))
	if x>>55&1 == 0 {
		l[i] = '.'
		i++
		i += len(appendUint(l[i:i], n>>10%100))
	}
	return i
}

// hex writes a hex string at i (checksums, addresses, UUID parts: 8-32 digits, as x says)
// and returns the new end.
func (g *textGen) hex(i int, x uint64) int {
	l := &g.line
	k := min(8<<(x>>50&3), 32)
	h := g.rng.Uint64()
	for j := range k {
		if j == 16 {
			h = g.rng.Uint64()
		}
		l[i] = hexDigits[h&15]
		i++
		h >>= 4
	}
	return i
}

// words writes up to three words from one random number x, as token w of nwords, and
// returns the new end and the last token written.
func (g *textGen) words(i int, x uint64, w, nwords int) (int, int) {
	l, v := &g.line, g.v
	k := v.pick[x&0xffff]
	*(*[16]byte)(l[i:]) = v.words[k]
	i += int(v.lens[k])
	if w+1 < nwords && x>>16&3 != 0 {
		w++
		k = v.pick[x>>18&0xffff]
		l[i] = ' '
		*(*[16]byte)(l[i+1:]) = v.words[k]
		i += 1 + int(v.lens[k])
		if w+1 < nwords && x>>34&3 != 0 {
			w++
			k = v.pick[x>>36&0xffff]
			l[i] = ' '
			*(*[16]byte)(l[i+1:]) = v.words[k]
			i += 1 + int(v.lens[k])
		}
	}
	return i, w
}

// endLine ends the line at i: a NUL in NUL-separated text, else the punctuation special
// draws and a newline. It returns the line's length.
func (g *textGen) endLine(i int, special uint64) int {
	l := &g.line
	if g.nul {
		l[i] = 0
		return i + 1
	}
	switch special & 7 {
	case 0:
		l[i] = '.'
		i++
	case 1:
		l[i] = ';'
		i++
	case 2:
		l[i] = ':'
		i++
	}
	l[i] = '\n'
	return i + 1
}

func appendUint(b []byte, n uint64) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// fill fills b completely; lines straddling calls continue in the next call.
func (g *textGen) fill(b []byte) {
	for len(b) > 0 {
		if len(g.pending) == 0 {
			// Generate straight into b when a whole line surely fits.
			if len(b) >= len(g.line) {
				for len(b) >= len(g.line) {
					n := g.genLineInto(b)
					b = b[n:]
				}
				continue
			}
			g.pending = g.line[:g.genLine()]
		}
		n := copy(b, g.pending)
		b = b[n:]
		g.pending = g.pending[n:]
	}
}

// genLineInto generates a line into g.line and copies it to b (which has room for it).
func (g *textGen) genLineInto(b []byte) int {
	n := g.genLine()
	return copy(b, g.line[:n])
}

// Binary segment kinds: an ELF file is a sequence of sections of very different entropy,
// which is what makes executables compress to about half.
const (
	segCode    = iota // instruction words from a small skewed opcode set with random operands
	segStrings        // NUL-terminated names (.dynstr, .rodata)
	segTable          // symbol/relocation records: increasing addresses, small fields, zeros
	segZeros          // padding, .bss-like alignment gaps
	segRandom         // embedded compressed data, hashes, constants
)

// segment kind by 4 random bits: weights tuned together with the segment lengths so that
// binaries deflate to ~0.5 (TestContentRatios).
var segKinds = [16]uint8{
	segCode, segCode, segCode, segCode, segCode,
	segStrings, segStrings, segStrings,
	segTable, segTable, segTable,
	segZeros, segZeros, segZeros, segZeros,
	segRandom,
}

// opcodes: 256 slots over 40 base instruction patterns, skewed so that a few (mov, ldr,
// bl, add) dominate like in real code.
var opcodes = func() [256]uint32 {
	var t [256]uint32
	r := rand.New(rand.NewPCG(0x6f70636f646573, 2))
	base := make([]uint32, 40)
	for i := range base {
		base[i] = r.Uint32() &^ 0x00000fff
	}
	for i := range t {
		// Index distribution roughly geometric: slot i maps to base[k] with k small more often.
		k := int(float64(len(base)) * math.Pow(float64(i)/256, 2.2))
		t[i] = base[k]
	}
	return t
}()

// codeBlocks is a dictionary of short instruction sequences (2-8 instructions, like basic
// blocks and prologues that compilers emit over and over); code segments are Zipf-picked
// blocks interleaved with instructions carrying random operands (branch offsets,
// immediates). Repetition within deflate's 32 KiB window is what makes real code compress.
var codeBlocks, codePick = func() ([][]byte, [1 << 12]uint16) {
	r := rand.New(rand.NewPCG(0x626c6f636b73, 4))
	blocks := make([][]byte, 2048)
	for i := range blocks {
		n := 2 + r.IntN(7)
		b := make([]byte, 4*n)
		for j := range n {
			binary.LittleEndian.PutUint32(b[4*j:], opcodes[r.IntN(256)]|r.Uint32()&0x0fff)
		}
		blocks[i] = b
	}
	var pick [1 << 12]uint16
	for i := range pick {
		pick[i] = uint16(float64(len(blocks)) * math.Pow(float64(i)/float64(len(pick)), codeSkew))
	}
	return blocks, pick
}()

// codeSkew > 1 makes low-numbered code blocks more frequent.
const codeSkew = 2.0

var elfHeader = []byte{
	0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	3, 0, 0xb7, 0, 1, 0, 0, 0, 0x40, 0x10, 0, 0, 0, 0, 0, 0,
	0x40, 0, 0, 0, 0, 0, 0, 0, 0xe8, 0x3a, 0x01, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0x40, 0, 0x38, 0, 9, 0, 0x40, 0, 0x1c, 0, 0x1b, 0,
}

// binGen produces ELF-like content: a header, then segments of the kinds above.
type binGen struct {
	rng     rand.PCG
	pos     uint64
	seg     uint8
	segLeft int
	addr    uint32
	text    textGen
	// codeScr holds the current code block plus an instruction; codePend is its part not
	// yet written.
	codeScr  [40]byte
	codePend []byte
}

func (g *binGen) reset(seed1, seed2 uint64) {
	g.rng.Seed(seed1, seed2)
	g.pos = 0
	g.segLeft = 0
	g.addr = 0x10000
	g.codePend = nil
	g.text.reset(seed1^0x5eed, seed2, true)
}

// fill fills b completely. Segment lengths are multiples of 16 and callers pass chunks
// that are multiples of 16 except at the end of a file, so record-structured segments
// never need to resume in the middle of a record.
func (g *binGen) fill(b []byte) {
	if g.pos < uint64(len(elfHeader)) {
		n := copy(b, elfHeader[g.pos:])
		g.pos += uint64(n)
		b = b[n:]
		if len(b) == 0 {
			return
		}
	}
	g.pos += uint64(len(b))
	for len(b) > 0 {
		if g.segLeft == 0 {
			r := g.rng.Uint64()
			g.seg = segKinds[r&15]
			// 256 B .. 16 KiB, log-uniform-ish, multiple of 16.
			g.segLeft = int(256<<(r>>4&6)) + int(r>>8&0xff)*16
		}
		n := min(g.segLeft, len(b))
		seg := b[:n]
		switch g.seg {
		case segCode:
			g.code(seg)
		case segStrings:
			g.text.fill(seg)
		case segTable:
			g.table(seg)
		case segZeros:
			clear(seg)
		case segRandom:
			fillRandom(&g.rng, seg)
		}
		b = b[n:]
		g.segLeft -= n
	}
}

func (g *binGen) code(b []byte) {
	// A block cut by the end of b continues at the start of the next call, so the content
	// does not depend on how the file is cut into chunks.
	i := copy(b, g.codePend)
	g.codePend = g.codePend[i:]
	for i < len(b) {
		r := g.rng.Uint64()
		n := copy(g.codeScr[:], codeBlocks[codePick[r&0xfff]])
		if r>>12&3 == 0 {
			binary.LittleEndian.PutUint32(g.codeScr[n:], opcodes[r>>16&0xff]|uint32(r>>24)&0x00ffffff)
			n += 4
		}
		k := copy(b[i:], g.codeScr[:n])
		i += k
		g.codePend = g.codeScr[k:n]
	}
}

func (g *binGen) table(b []byte) {
	i := 0
	for ; i+16 <= len(b); i += 16 {
		r := g.rng.Uint64()
		g.addr += uint32(r&15+1) * 4
		binary.LittleEndian.PutUint32(b[i:], g.addr)
		binary.LittleEndian.PutUint32(b[i+4:], uint32(r>>4&0x3f)<<8|uint32(r>>10&3)+1)
		binary.LittleEndian.PutUint32(b[i+8:], uint32(r>>12&0xff))
		binary.LittleEndian.PutUint32(b[i+12:], 0)
	}
	if i < len(b) {
		clear(b[i:])
	}
}

// fillRandom fills b with PCG output, 8 bytes per call (about 5 GB/s).
func fillRandom(rng *rand.PCG, b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	if i < len(b) {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], rng.Uint64())
		copy(b[i:], tmp[:])
	}
}

// Magic headers of already-compressed formats, by file name extension.
var magics = map[string][]byte{
	".gz":  {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03},
	".png": {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R'},
	".jpg": {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00},
}

// randGen produces already-compressed content: a format magic, then random bytes.
type randGen struct {
	rng   rand.PCG
	pos   uint64
	magic []byte
}

func (g *randGen) reset(seed1, seed2 uint64, magic []byte) {
	g.rng.Seed(seed1, seed2)
	g.pos = 0
	g.magic = magic
}

func (g *randGen) fill(b []byte) {
	// Random bytes for the whole chunk, then the magic over its start: chunks stay aligned
	// to the 8-byte PCG outputs, so the content does not depend on the chunking.
	fillRandom(&g.rng, b)
	if g.pos < uint64(len(g.magic)) {
		copy(b, g.magic[g.pos:])
	}
	g.pos += uint64(len(b))
}

// contentGen generates the content of one file of a given kind, chunk by chunk. It is reused
// across files so that generating a tree allocates nothing per file.
type contentGen struct {
	kind uint8
	text textGen
	bin  binGen
	rnd  randGen
}

func (c *contentGen) reset(kind uint8, seed1, seed2 uint64, magic []byte) {
	c.kind = kind
	switch kind {
	case contentText:
		c.text.reset(seed1, seed2, false)
	case contentBinary:
		c.bin.reset(seed1, seed2)
	default:
		c.rnd.reset(seed1, seed2, magic)
	}
}

func (c *contentGen) fill(b []byte) {
	switch c.kind {
	case contentText:
		c.text.fill(b)
	case contentBinary:
		c.bin.fill(b)
	default:
		c.rnd.fill(b)
	}
}
