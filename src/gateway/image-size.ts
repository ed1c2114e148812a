/**
 * The pixel size of a base64 image, read from its header: PNG, GIF, JPEG and WebP, the image formats the messages wire
 * takes. Only the few bytes the header needs are decoded, wherever they lie (base64 maps every 3 bytes to 4
 * characters, so bytes at any offset decode from a short slice): a JPEG's frame header, after Exif segments of any
 * length, costs a few bytes per segment passed, never the whole image. Null when the size cannot be read.
 */

export interface ImageSize {
  width: number;
  height: number;
}

/** How many JPEG segments are walked for the frame header before giving up (cameras write a handful). */
const MAX_JPEG_SEGMENTS = 64;

/** `length` bytes of the base64 `data` from byte `offset`, or null past its end or where it is not base64. */
function bytesAt(data: string, offset: number, length: number): Buffer | null {
  const start = Math.floor(offset / 3) * 4;
  const end = Math.ceil((offset + length) / 3) * 4;
  if (end > data.length) return null;
  const slice = data.slice(start, end);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(slice)) return null;
  const bytes = Buffer.from(slice, 'base64');
  const skip = offset % 3;
  return bytes.length >= skip + length ? bytes.subarray(skip, skip + length) : null;
}

const PNG_SIGNATURE = '89504e470d0a1a0a';

function pngSize(head: Buffer): ImageSize | null {
  if (head.toString('hex', 0, 8) !== PNG_SIGNATURE || head.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
}

function gifSize(head: Buffer): ImageSize | null {
  const signature = head.toString('latin1', 0, 6);
  if (signature !== 'GIF87a' && signature !== 'GIF89a') return null;
  return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
}

/** A WebP's size from its first chunk: lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`). */
function webpSize(head: Buffer): ImageSize | null {
  if (head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WEBP') return null;
  switch (head.toString('latin1', 12, 16)) {
    case 'VP8 ':
      return { width: head.readUInt16LE(26) & 0x3fff, height: head.readUInt16LE(28) & 0x3fff };
    case 'VP8L': {
      const bits = head.readUInt32LE(21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case 'VP8X':
      return { width: head.readUIntLE(24, 3) + 1, height: head.readUIntLE(27, 3) + 1 };
    default:
      return null;
  }
}

/** A start-of-frame marker (SOF0-SOF15 but DHT C4, JPG C8 and DAC CC), whose segment holds the size. */
function isFrameMarker(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** A JPEG's size from its frame header, found by walking the segments before it by their lengths. */
function jpegSize(data: string): ImageSize | null {
  let offset = 2;
  for (let segment = 0; segment < MAX_JPEG_SEGMENTS; segment++) {
    const header = bytesAt(data, offset, 9);
    if (header === null || header[0] !== 0xff) return null;
    const marker = header[1]!;
    if (isFrameMarker(marker)) return { width: header.readUInt16BE(7), height: header.readUInt16BE(5) };
    // Start of scan or end of image before any frame header: no size to read.
    if (marker === 0xda || marker === 0xd9) return null;
    offset += 2 + header.readUInt16BE(2);
  }
  return null;
}

export function base64ImageSize(data: string): ImageSize | null {
  const head = bytesAt(data, 0, 30) ?? bytesAt(data, 0, 24) ?? bytesAt(data, 0, 12);
  if (head === null) return null;
  let size: ImageSize | null;
  if (head[0] === 0xff && head[1] === 0xd8) size = jpegSize(data);
  else if (head.length >= 24 && head[0] === 0x89) size = pngSize(head);
  else if (head[0] === 0x47) size = gifSize(head);
  else if (head.length >= 30) size = webpSize(head);
  else size = null;
  return size !== null && size.width > 0 && size.height > 0 ? size : null;
}
