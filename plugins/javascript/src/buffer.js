// What Node gives a promptfoo assertion that Boa and boa_runtime do not: a
// `Buffer` (the common part of Node's: from/alloc/concat/byteLength/
// isBuffer/compare, toString, equals, indexOf and write in utf8, base64,
// base64url, hex, latin1, ascii and utf16le), and `structuredClone`'s error
// named as Node names it. Pure functions of their arguments: no files,
// network or environment. Evaluated on the first read of `Buffer` or
// `structuredClone` (engine.rs: a realm is made for every call, and most
// never read them).
(function () {
  'use strict';
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

  // --- UTF-8: boa_runtime's TextEncoder/TextDecoder (WHATWG's, as Node's) --
  const utf8Encode = (str) => Array.from(new TextEncoder().encode(String(str)));
  const utf8Decode = (bytes) => new TextDecoder().decode(Uint8Array.from(bytes));

  // --- structuredClone's error, named as Node names it ------------------------
  const clone = globalThis.structuredClone;
  if (typeof clone === 'function') {
    define('structuredClone', function structuredClone(value, options) {
      try {
        return clone(value, options);
      } catch (e) {
        if (e instanceof Error && /^DataCloneError\b/.test(e.message)) {
          const err = new Error(
            typeof value === 'function' || typeof value === 'symbol'
              ? String(value) + ' could not be cloned.'
              : e.message.replace(/^DataCloneError:\s*/, ''),
          );
          err.name = 'DataCloneError';
          throw err;
        }
        throw e;
      }
    });
  }

  // --- Buffer ----------------------------------------------------------------
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function normEncoding(enc) {
    const e = enc === undefined ? 'utf8' : String(enc).toLowerCase();
    switch (e) {
      case 'utf8': case 'utf-8': return 'utf8';
      case 'hex': return 'hex';
      case 'base64': return 'base64';
      case 'base64url': return 'base64url';
      case 'latin1': case 'binary': return 'latin1';
      case 'ascii': return 'ascii';
      case 'ucs2': case 'ucs-2': case 'utf16le': case 'utf-16le': return 'utf16le';
      default: throw new TypeError('Unknown encoding: ' + enc);
    }
  }
  function decodeBase64(str) {
    const clean = String(str).replace(/[^A-Za-z0-9+/\-_]/g, '').replace(/-/g, '+').replace(/_/g, '/');
    const out = [];
    let bits = 0;
    let acc = 0;
    for (const ch of clean) {
      acc = (acc << 6) | B64.indexOf(ch);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out.push((acc >> bits) & 0xff);
      }
    }
    return out;
  }
  function encodeBase64(bytes, url) {
    let out = '';
    let i = 0;
    for (; i + 2 < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
      out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
    }
    if (i < bytes.length) {
      const n = (bytes[i] << 16) | ((i + 1 < bytes.length ? bytes[i + 1] : 0) << 8);
      out += B64[n >> 18] + B64[(n >> 12) & 63];
      out += i + 1 < bytes.length ? B64[(n >> 6) & 63] : '=';
      out += '=';
    }
    if (url) out = out.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    return out;
  }
  function bytesOf(string, enc) {
    const s = String(string);
    switch (normEncoding(enc)) {
      case 'utf8': return utf8Encode(s);
      case 'hex': {
        const out = [];
        for (let i = 0; i + 1 < s.length; i += 2) {
          const b = parseInt(s.slice(i, i + 2), 16);
          if (Number.isNaN(b)) break;
          out.push(b);
        }
        return out;
      }
      case 'base64': case 'base64url': return decodeBase64(s);
      case 'latin1': case 'ascii': return Array.from(s, (c) => c.charCodeAt(0) & 0xff);
      case 'utf16le': {
        const out = [];
        for (let i = 0; i < s.length; i++) { const c = s.charCodeAt(i); out.push(c & 0xff, c >> 8); }
        return out;
      }
    }
  }
  class Buffer extends Uint8Array {
    static from(value, encodingOrOffset, length) {
      if (typeof value === 'string') return Buffer._of(bytesOf(value, encodingOrOffset));
      if (value instanceof ArrayBuffer) {
        const offset = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset);
        const len = length === undefined ? value.byteLength - offset : Number(length);
        return new Buffer(value, offset, len);
      }
      if (ArrayBuffer.isView(value) || Array.isArray(value)) return Buffer._of(Array.from(value, (x) => Number(x) & 0xff));
      if (value && value.type === 'Buffer' && Array.isArray(value.data)) return Buffer._of(value.data);
      throw new TypeError('The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.');
    }
    static _of(bytes) {
      const b = new Buffer(bytes.length);
      for (let i = 0; i < bytes.length; i++) b[i] = bytes[i];
      return b;
    }
    static alloc(size, fill, encoding) {
      const b = new Buffer(size);
      if (fill !== undefined && fill !== 0) {
        const pattern = typeof fill === 'string' ? bytesOf(fill, encoding) : [Number(fill) & 0xff];
        if (pattern.length) for (let i = 0; i < size; i++) b[i] = pattern[i % pattern.length];
      }
      return b;
    }
    static allocUnsafe(size) { return new Buffer(size); }
    static isBuffer(x) { return x instanceof Buffer; }
    static isEncoding(e) { try { normEncoding(e); return true; } catch (_) { return false; } }
    static byteLength(value, encoding) {
      if (typeof value === 'string') return bytesOf(value, encoding).length;
      return value.byteLength;
    }
    static concat(list, totalLength) {
      const total = totalLength === undefined ? list.reduce((n, b) => n + b.length, 0) : totalLength;
      const out = Buffer.alloc(total);
      let at = 0;
      for (const b of list) {
        for (let i = 0; i < b.length && at < total; i++) out[at++] = b[i];
      }
      return out;
    }
    static compare(a, b) { return a.compare(b); }
    toString(encoding, start = 0, end = this.length) {
      const bytes = Array.prototype.slice.call(this, Math.max(0, start), Math.min(this.length, end));
      switch (normEncoding(encoding)) {
        case 'utf8': return utf8Decode(bytes);
        case 'hex': return bytes.map((b) => (b < 16 ? '0' : '') + b.toString(16)).join('');
        case 'base64': return encodeBase64(bytes, false);
        case 'base64url': return encodeBase64(bytes, true);
        case 'latin1': return String.fromCharCode.apply(null, bytes);
        case 'ascii': return String.fromCharCode.apply(null, bytes.map((b) => b & 0x7f));
        case 'utf16le': {
          let s = '';
          for (let i = 0; i + 1 < bytes.length; i += 2) s += String.fromCharCode(bytes[i] | (bytes[i + 1] << 8));
          return s;
        }
      }
    }
    toJSON() { return { type: 'Buffer', data: Array.from(this) }; }
    equals(other) { return this.compare(other) === 0; }
    compare(other) {
      const n = Math.min(this.length, other.length);
      for (let i = 0; i < n; i++) {
        if (this[i] !== other[i]) return this[i] < other[i] ? -1 : 1;
      }
      return this.length === other.length ? 0 : this.length < other.length ? -1 : 1;
    }
    slice(start, end) { return this.subarray(start, end); }
    subarray(start, end) {
      const v = Uint8Array.prototype.subarray.call(this, start, end);
      return new Buffer(v.buffer, v.byteOffset, v.length);
    }
    write(string, offset = 0, length, encoding) {
      if (typeof offset === 'string') { encoding = offset; offset = 0; }
      const bytes = bytesOf(string, encoding);
      const n = Math.min(bytes.length, this.length - offset, length === undefined ? Infinity : length);
      for (let i = 0; i < n; i++) this[offset + i] = bytes[i];
      return n;
    }
    includes(value, byteOffset, encoding) { return this.indexOf(value, byteOffset, encoding) !== -1; }
    indexOf(value, byteOffset = 0, encoding) {
      const needle = typeof value === 'number' ? [value & 0xff] : typeof value === 'string' ? bytesOf(value, encoding) : Array.from(value);
      for (let i = Math.max(0, byteOffset); i + needle.length <= this.length; i++) {
        let k = 0;
        while (k < needle.length && this[i + k] === needle[k]) k++;
        if (k === needle.length) return i;
      }
      return -1;
    }
  }
  define('Buffer', Buffer);
})();
