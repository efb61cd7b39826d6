// Intl as Node answers it: the default locale `en-US` (Node's without
// LANG; Boa's is `und`), and what Boa formats differently from Node — dates,
// numbers as currency, percent or unit — refused with a RangeError saying
// so, never a different string. Evaluated on the first read of `Intl` or of
// a method it replaces (engine.rs), each replaced with a data property.
(function () {
  'use strict';
  const put = (object, name, value) =>
    Object.defineProperty(object, name, { value, writable: true, configurable: true, enumerable: false });
  // --- Intl as Node answers it ------------------------------------------------
  // Boa's default locale is `und` (no locale is found inside the sandbox);
  // Node's, with no LANG, is `en-US`: a call without a locale gets that.
  const DEFAULT_LOCALE = 'en-US';
  const withLocale = (locales) => (locales === undefined ? DEFAULT_LOCALE : locales);
  const refuse = (what) => {
    throw new RangeError(what + ' is not formatted as Node formats it by the evalhost sandbox\'s engine (Boa), so it is refused rather than answered differently');
  };
  // The number styles Boa does not format as Node: currency throws in Boa,
  // percent is silently wrong ("0" for 0.256), unit is unchecked.
  const checkNumberOptions = (options) => {
    const style = options && options.style;
    if (style === 'currency' || style === 'percent' || style === 'unit') {
      refuse('Intl.NumberFormat with style "' + style + '"');
    }
  };
  if (typeof Intl === 'object') {
    const NF = Intl.NumberFormat;
    const NumberFormat = function NumberFormat(locales, options) {
      checkNumberOptions(options);
      return new NF(withLocale(locales), options);
    };
    Object.defineProperty(NumberFormat, 'prototype', { value: NF.prototype });
    NumberFormat.supportedLocalesOf = NF.supportedLocalesOf;
    put(Intl, 'NumberFormat', NumberFormat);
    for (const name of ['Collator', 'Segmenter', 'PluralRules', 'ListFormat']) {
      const Orig = Intl[name];
      if (typeof Orig !== 'function') continue;
      const Wrapped = function (locales, options) {
        if (new.target === undefined && name !== 'Collator') {
          throw new TypeError('Constructor Intl.' + name + " requires 'new'");
        }
        return new Orig(withLocale(locales), options);
      };
      Object.defineProperty(Wrapped, 'name', { value: name });
      Object.defineProperty(Wrapped, 'prototype', { value: Orig.prototype });
      Wrapped.supportedLocalesOf = Orig.supportedLocalesOf;
      put(Intl, name, Wrapped);
    }
    // Dates: Boa's patterns differ from Node's (`1/1/70` for `1/1/1970`, no
    // zone name, hours not padded): refused with the reason.
    put(Intl, 'DateTimeFormat', function DateTimeFormat() {
      refuse('Intl.DateTimeFormat');
    });
    const numberToLocale = Number.prototype.toLocaleString;
    put(Number.prototype, 'toLocaleString', function toLocaleString(locales, options) {
      checkNumberOptions(options);
      return numberToLocale.call(this, withLocale(locales), options);
    });
    if (typeof BigInt === 'function') {
      const bigToLocale = BigInt.prototype.toLocaleString;
      put(BigInt.prototype, 'toLocaleString', function toLocaleString(locales, options) {
        checkNumberOptions(options);
        return bigToLocale.call(this, withLocale(locales), options);
      });
    }
    const compare = String.prototype.localeCompare;
    put(String.prototype, 'localeCompare', function localeCompare(that, locales, options) {
      return compare.call(this, that, withLocale(locales), options);
    });
    for (const name of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']) {
      put(Date.prototype, name, function () {
        refuse('Date.prototype.' + name);
      });
    }
    // Arrays format each element with its own toLocaleString (above),
    // joined by "," as Node joins them (Boa puts ", ").
    put(Array.prototype, 'toLocaleString', function toLocaleString(locales, options) {
      return Array.prototype.map
        .call(this, (x) => (x === null || x === undefined ? '' : x.toLocaleString(locales, options)))
        .join(',');
    });
  }
})();
