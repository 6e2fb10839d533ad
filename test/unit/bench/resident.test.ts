import { expect } from 'chai';
import { attribute, mappingsOf, parseSections, parseSymbols } from '../../../bench/resident';

describe('bench: resident pages of an executable', () => {
  const maps = [
    '00400000-00600000 r--p 00000000 fe:00 1234   /usr/bin/node',
    '00600000-00a00000 r-xp 00200000 fe:00 1234   /usr/bin/node',
    '7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ',
    '7f0000002000-7f0000003000 r-xp 00000000 fe:00 99     /usr/lib/x86_64-linux-gnu/libc.so.6',
  ].join('\n');

  it('keeps only the mappings of the executable, with their file offsets', () => {
    const m = mappingsOf(maps, '/usr/bin/node');
    expect(m.map((x) => [x.perms, x.offset, x.end - x.start])).to.deep.equal([
      ['r--p', 0, 0x200000],
      ['r-xp', 0x200000, 0x400000],
    ]);
  });

  it('attributes each page to its section and to the sized symbol that covers it', () => {
    const sections = parseSections(
      [
        '  [Nr] Name              Type            Address          Off    Size   ES Flg Lk Inf Al',
        '  [13] .text             PROGBITS        0000000000601000 201000 100000 00  AX  0   0 64',
        '  [16] .rodata           PROGBITS        0000000000402000 002000 010000 00   A  0   0 64',
      ].join('\n'),
    );
    const symbols = parseSymbols(
      ['0000000000601000 0000000000002000 T compile', '0000000000402000 0000000000001000 R icudt_dat', '0000000000700000 T unsized', 'junk'].join(
        '\n',
      ),
    );
    // Two pages of `compile`, one of ICU data, one rodata page no symbol covers, one page in no section.
    const { bySection, bySymbol } = attribute([0x201000, 0x202000, 0x2000, 0x4000, 0x900000], sections, symbols);
    expect(Object.fromEntries(bySection)).to.deep.equal({ '.text': 8, '.rodata': 8, '(no section)': 4 });
    expect(Object.fromEntries(bySymbol)).to.deep.equal({ '.text compile': 8, '.rodata icudt_dat': 4, '.rodata (unnamed)': 4 });
  });
});
