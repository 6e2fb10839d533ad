import { expect } from 'chai';
import { boolean, integer, namedBits, octetString, oid, readElements, sequence, set, time } from '../../../operator/conversion/der';

const hex = (b: Buffer) => b.toString('hex');

describe('DER encoding', () => {
  const cases: Record<string, { got: () => Buffer; want: string }> = {
    'integer 0': { got: () => integer(0), want: '020100' },
    'integer 127: one byte': { got: () => integer(127), want: '02017f' },
    'integer 128: a zero byte keeps it positive': { got: () => integer(128), want: '02020080' },
    'integer 256': { got: () => integer(256), want: '02020100' },
    'integer from bytes: leading zeros dropped, one put back for the top bit': {
      got: () => integer(Buffer.from([0, 0, 0x80, 1])),
      want: '0203008001',
    },
    'integer from bytes: zero': { got: () => integer(Buffer.from([0, 0])), want: '020100' },
    'oid ecdsa-with-SHA256 (multi-byte arcs)': { got: () => oid('1.2.840.10045.4.3.2'), want: '06082a8648ce3d040302' },
    'oid basicConstraints': { got: () => oid('2.5.29.19'), want: '0603551d13' },
    'boolean true is 0xff': { got: () => boolean(true), want: '0101ff' },
    'long form length, one byte (200)': { got: () => octetString(Buffer.alloc(200)).subarray(0, 3), want: '0481c8' },
    'long form length, two bytes (300)': { got: () => octetString(Buffer.alloc(300)).subarray(0, 4), want: '0482012c' },
    'UTCTime before 2050, milliseconds dropped': {
      got: () => time(new Date('2026-12-02T04:52:18.999Z')),
      want: `170d${Buffer.from('261202045218Z').toString('hex')}`,
    },
    'GeneralizedTime from 2050': { got: () => time(new Date('2050-01-01T00:00:00Z')), want: `180f${Buffer.from('20500101000000Z').toString('hex')}` },
    'GeneralizedTime before 1950': {
      got: () => time(new Date('1949-12-31T23:59:59Z')),
      want: `180f${Buffer.from('19491231235959Z').toString('hex')}`,
    },
    'key usage digitalSignature, keyCertSign, cRLSign: one unused bit': { got: () => namedBits([0, 5, 6]), want: '03020186' },
    'key usage digitalSignature alone: seven unused bits': { got: () => namedBits([0]), want: '03020780' },
    'set of several items sorted by encoding': { got: () => set(integer(2), integer(1)), want: '3106020101020102' },
  };
  for (const [name, { got, want }] of Object.entries(cases)) it(name, () => expect(hex(got())).to.equal(want));

  it('refuses what it cannot encode faithfully', () => {
    expect(() => integer(-1)).to.throw(/non-negative/);
    expect(() => integer(2 ** 60)).to.throw(/safe integer/);
    expect(() => oid('3.1')).to.throw(/bad object identifier/);
    expect(() => oid('1.2.x')).to.throw(/bad object identifier/);
    expect(() => time(new Date(NaN))).to.throw(/invalid date/);
  });

  it('readElements walks a sequence it encoded, long lengths included', () => {
    const body = octetString(Buffer.alloc(300, 1));
    const der = sequence(integer(5), body, oid('2.5.4.3'));
    const [outer] = readElements(der);
    expect(outer).to.deep.include({ tag: 0x30, start: 0, end: der.length });
    const inner = readElements(der, outer!.contentStart, outer!.end);
    expect(inner.map((e) => e.tag)).to.deep.equal([0x02, 0x04, 0x06]);
    expect(der.subarray(inner[1]!.start, inner[1]!.end).equals(body)).to.equal(true);
    expect(() => readElements(der.subarray(0, der.length - 1))).to.throw(/runs past/);
  });
});
