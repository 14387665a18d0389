// The prelude is evaluated once per instance by Prepare, before any user
// code, as a global script whose value is this function. Prepare calls it
// with the host functions and keeps the object it returns, whose methods
// Run calls. Everything it needs from the standard library is captured here
// first, so that user code that replaces a built-in (Array.prototype.join,
// JSON.stringify, ...) changes its own behaviour but cannot break console
// output, timers or result rendering.
//
// host.write(fd, text, nul) writes text (and a NUL byte when nul is true:
// the host reads C strings, so text never contains one) to stdout (1) or
// stderr (2); host.schedule(id, ms) arms timer id; host.cancel(id) disarms it;
// host.maxPendingTimers is how many timers may be armed at once.
(function (host) {
  'use strict';

  const hostWrite = host.write;
  const hostSchedule = host.schedule;
  const hostCancel = host.cancel;
  const maxPendingTimers = host.maxPendingTimers;

  // The global object, held here: the code may delete or replace the
  // global binding globalThis, and Run still reaches the real one.
  const global = globalThis;
  const apply = Reflect.apply;
  // uncurry(fn)(self, ...args) is fn.call(self, ...args) with the call
  // bound now: a bound function, so no array is made per call.
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const getPrototypeOf = Object.getPrototypeOf;
  const setPrototypeOf = Object.setPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getOwnPropertySymbols = Object.getOwnPropertySymbols;
  const defineProperty = Object.defineProperty;
  const objectKeys = Object.keys;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const MathMin = Math.min;
  const MathMax = Math.max;
  const MathSqrt = Math.sqrt;
  const MathRound = Math.round;
  const MathFloor = Math.floor;
  const NumberIsFinite = Number.isFinite;
  const StringCtor = String;
  const BigIntCtor = BigInt;
  const NumberCtor = Number;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const MapCtor = Map;
  const SetCtor = Set;
  const hasOwn = uncurry(ObjectProto.hasOwnProperty);
  const propertyIsEnumerable = uncurry(ObjectProto.propertyIsEnumerable);
  const objectToString = uncurry(ObjectProto.toString);
  const functionToString = uncurry(Function.prototype.toString);
  const symbolToString = uncurry(Symbol.prototype.toString);
  const errorToString = uncurry(Error.prototype.toString);
  const regexpToString = uncurry(RegExp.prototype.toString);
  const regexpTest = uncurry(RegExp.prototype.test);
  const dateToISOString = uncurry(Date.prototype.toISOString);
  const dateGetTime = uncurry(Date.prototype.getTime);
  const numberValueOf = uncurry(Number.prototype.valueOf);
  const stringValueOf = uncurry(String.prototype.valueOf);
  const booleanValueOf = uncurry(Boolean.prototype.valueOf);
  const bigintValueOf = uncurry(BigInt.prototype.valueOf);
  const symbolValueOf = uncurry(Symbol.prototype.valueOf);
  const join = uncurry(Array.prototype.join);
  const push = uncurry(Array.prototype.push);
  const pop = uncurry(Array.prototype.pop);
  const includes = uncurry(Array.prototype.includes);
  const indexOf = uncurry(Array.prototype.indexOf);
  const split = uncurry(String.prototype.split);
  const slice = uncurry(String.prototype.slice);
  const repeat = uncurry(String.prototype.repeat);
  const padStart = uncurry(String.prototype.padStart);
  const padEnd = uncurry(String.prototype.padEnd);
  // QuickJS's includes compares at every position; indexOf looks for the
  // first character first, which makes it many times faster on long text.
  const strIndexOf = uncurry(String.prototype.indexOf);
  const strIncludes = (s, sub) => strIndexOf(s, sub) !== -1;
  const charCodeAt = uncurry(String.prototype.charCodeAt);
  const replace = uncurry(String.prototype.replace);
  const trimEnd = uncurry(String.prototype.trimEnd);
  const startsWith = uncurry(String.prototype.startsWith);
  const mapSize = uncurry(getOwnPropertyDescriptor(Map.prototype, 'size').get);
  const setSize = uncurry(getOwnPropertyDescriptor(Set.prototype, 'size').get);
  const mapEntries = uncurry(Map.prototype.entries);
  const setValues = uncurry(Set.prototype.values);
  const mapGet = uncurry(Map.prototype.get);
  const mapSet = uncurry(Map.prototype.set);
  const mapHas = uncurry(Map.prototype.has);
  const mapDelete = uncurry(Map.prototype.delete);
  const iteratorNext = uncurry(getPrototypeOf(new Map().entries()).next);
  const setIteratorNext = uncurry(getPrototypeOf(new Set().values()).next);
  const typedArrayLength = uncurry(getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'length').get);
  const arrayBufferByteLength = uncurry(getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get);
  const promiseResolve = Promise.resolve.bind(Promise);
  const promiseThen = uncurry(Promise.prototype.then);
  const PromiseCtor = Promise;
  const toStringTag = Symbol.toStringTag;
  const MathTrunc = Math.trunc;

  const RegExpProto = RegExp.prototype;
  const regexpSource = uncurry(getOwnPropertyDescriptor(RegExpProto, 'source').get);
  const weakMapHas = uncurry(WeakMap.prototype.has);
  const weakSetHas = uncurry(WeakSet.prototype.has);
  const errorIsError = Error.isError;
  const dataViewByteLength = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get);

  const weakMapHasAny = (v) => weakMapHas(v, ObjectProto);
  const weakSetHasAny = (v) => weakSetHas(v, ObjectProto);

  // brand tests an internal slot through a built-in that throws without it:
  // unlike instanceof, no Symbol.hasInstance is consulted, and an object
  // made with Object.create(Map.prototype) is no Map. The built-in's
  // prototype must be on value's chain first: that keeps ordinary objects
  // from paying for a thrown exception each (QuickJS builds a stack trace
  // for every one, and rendering a large array would take seconds).
  const brandProto = new MapCtor([
    [mapSize, Map.prototype], [setSize, Set.prototype], [weakMapHasAny, WeakMap.prototype],
    [weakSetHasAny, WeakSet.prototype], [dateGetTime, Date.prototype], [regexpSource, RegExpProto],
    [arrayBufferByteLength, ArrayBuffer.prototype], [dataViewByteLength, DataView.prototype],
    [numberValueOf, Number.prototype], [stringValueOf, String.prototype], [booleanValueOf, Boolean.prototype],
    [bigintValueOf, BigInt.prototype], [symbolValueOf, Symbol.prototype],
  ]);
  function brand(test, value) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
    const proto = mapGet(brandProto, test);
    let p = getPrototypeOf(value);
    while (p !== null && p !== proto) p = getPrototypeOf(p);
    if (p === null) return false;
    try { test(value); return true; } catch { return false; }
  }
  const isMap = (v) => brand(mapSize, v);
  const isSet = (v) => brand(setSize, v);
  const isDate = (v) => brand(dateGetTime, v);
  const isRegExp = (v) => v !== RegExpProto && brand(regexpSource, v);
  const isWeak = (v) => brand(weakMapHasAny, v) || brand(weakSetHasAny, v);

  // ---- inspect: a subset of node's util.inspect with its default options
  // (depth 2, 100 array items, breakLength 80, compact 3), so that
  // console.log prints what a JavaScript programmer expects.

  const kObjectType = 0;
  const kArrayExtrasType = 1;
  const maxArrayLength = 100;
  const breakLength = 80;
  const compact = 3;

  const identifierRe = /^[a-zA-Z_][a-zA-Z_0-9]*$/;
  const metaEscapes = {
    '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '\\': '\\\\',
  };

  function quote(str) {
    let q = "'";
    if (strIncludes(str, "'")) {
      if (!strIncludes(str, '"')) q = '"';
      else if (!strIncludes(str, '`') && !strIncludes(str, '${')) q = '`';
    }
    let out = '';
    for (let i = 0; i < str.length; i++) {
      const c = str[i];
      const code = charCodeAt(str, i);
      if (c === q || c === '\\' || code < 0x20 || code === 0x7f) {
        if (hasOwn(metaEscapes, c)) out += metaEscapes[c];
        else if (c === q) out += '\\' + c;
        else out += '\\x' + padStart(code.toString(16).toUpperCase(), 2, '0');
      } else {
        out += c;
      }
    }
    return q + out + q;
  }

  function formatNumber(n) {
    return n === 0 && 1 / n < 0 ? '-0' : StringCtor(n);
  }

  function formatPrimitive(v) {
    switch (typeof v) {
      case 'string': return quote(v);
      case 'number': return formatNumber(v);
      case 'bigint': return StringCtor(v) + 'n';
      case 'symbol': return symbolToString(v);
      default: return StringCtor(v);
    }
  }

  // ctorName is the name of the first constructor on value's prototype
  // chain, or null for a null-prototype object.
  function ctorName(value) {
    let obj = value;
    while (obj !== null && obj !== undefined) {
      const desc = getOwnPropertyDescriptor(obj, 'constructor');
      if (desc !== undefined && typeof desc.value === 'function' &&
          typeof desc.value.name === 'string' && desc.value.name !== '') {
        return desc.value.name;
      }
      obj = getPrototypeOf(obj);
    }
    return null;
  }

  function functionBase(fn) {
    let src = '';
    try { src = functionToString(fn); } catch { /* a revoked proxy */ }
    const name = typeof fn.name === 'string' ? fn.name : '';
    if (startsWith(src, 'class') && regexpTest(/^class\b/, src)) {
      return name ? `[class ${name}]` : '[class (anonymous)]';
    }
    let kind = 'Function';
    const ctor = ctorName(fn);
    if (ctor === 'AsyncFunction' || ctor === 'GeneratorFunction' || ctor === 'AsyncGeneratorFunction') kind = ctor;
    return name ? `[${kind}: ${name}]` : `[${kind} (anonymous)]`;
  }

  function errorBase(err) {
    let name = 'Error';
    let message = '';
    let stack = '';
    try { name = StringCtor(err.name); } catch { /* keep the default */ }
    try { message = StringCtor(err.message); } catch { /* keep the default */ }
    try { stack = typeof err.stack === 'string' ? trimEnd(err.stack) : ''; } catch { /* none */ }
    const head = message ? `${name}: ${message}` : name;
    if (!stack) return `[${head}]`;
    // QuickJS's stack holds only the "    at ..." lines; node's starts
    // with the "Name: message" line.
    return startsWith(stack, head) ? stack : head + '\n' + stack;
  }

  function keysOf(value, arrayLike) {
    const keys = [];
    for (const k of objectKeys(value)) {
      if (arrayLike && regexpTest(/^(0|[1-9][0-9]*)$/, k)) continue;
      push(keys, k);
    }
    for (const s of getOwnPropertySymbols(value)) {
      if (propertyIsEnumerable(value, s)) push(keys, s);
    }
    return keys;
  }

  function formatValue(ctx, value, recurseTimes) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
      return formatPrimitive(value);
    }
    if (includes(ctx.seen, value)) {
      let index = 1;
      if (ctx.circular === undefined) {
        ctx.circular = new MapCtor();
        mapSet(ctx.circular, value, index);
      } else if (mapHas(ctx.circular, value)) {
        index = mapGet(ctx.circular, value);
      } else {
        index = mapSize(ctx.circular) + 1;
        mapSet(ctx.circular, value, index);
      }
      return `[Circular *${index}]`;
    }
    return formatRaw(ctx, value, recurseTimes);
  }

  function formatRaw(ctx, value, recurseTimes) {
    const ctor = ctorName(value);
    let keys;
    let base = '';
    let braces;
    let extrasType = kObjectType;
    let formatter = formatObjectEntries;
    let noEntries = false;
    const prefix = (fallback, size) => {
      const name = ctor === null ? `[${fallback}: null prototype]` : ctor;
      const sizeText = size === undefined ? '' : `(${size})`;
      return name === fallback && size === undefined ? '' : `${name}${sizeText} `;
    };

    if (isArray(value)) {
      keys = keysOf(value, true);
      const p = ctor === 'Array' ? '' : prefix('Array', value.length);
      braces = [`${p}[`, ']'];
      extrasType = kArrayExtrasType;
      formatter = formatArrayEntries;
      noEntries = value.length === 0 && keys.length === 0;
    } else if (isMap(value)) {
      keys = keysOf(value, false);
      braces = [`${prefix('Map', mapSize(value))}{`, '}'];
      formatter = formatMapEntries;
      noEntries = mapSize(value) === 0 && keys.length === 0;
    } else if (isSet(value)) {
      keys = keysOf(value, false);
      braces = [`${prefix('Set', setSize(value))}{`, '}'];
      formatter = formatSetEntries;
      noEntries = setSize(value) === 0 && keys.length === 0;
    } else if (isView(value) && !brand(dataViewByteLength, value)) {
      keys = keysOf(value, true);
      braces = [`${prefix(ctor || 'TypedArray', typedArrayLength(value))}[`, ']'];
      extrasType = kArrayExtrasType;
      formatter = formatArrayEntries;
      noEntries = typedArrayLength(value) === 0 && keys.length === 0;
    } else {
      keys = keysOf(value, false);
      braces = ['{', '}'];
      if (typeof value === 'function') {
        base = functionBase(value);
        if (keys.length === 0) return base;
      } else if (errorIsError(value)) {
        base = errorBase(value);
        keys = keysOf(value, false);
        if (keys.length === 0) return base;
        base = replace(base, /\n/g, '\n' + repeat(' ', ctx.indentationLvl));
      } else if (isRegExp(value)) {
        base = regexpToString(value);
        if (keys.length === 0) return base;
      } else if (isDate(value)) {
        const t = dateGetTime(value);
        base = t === t ? dateToISOString(value) : 'Invalid Date';
        if (keys.length === 0) return base;
      } else if (brand(arrayBufferByteLength, value)) {
        base = `ArrayBuffer { byteLength: ${arrayBufferByteLength(value)} }`;
        if (keys.length === 0) return base;
      } else if (value instanceof PromiseCtor) {
        braces = [`${prefix('Promise')}{`, '}'];
        base = '';
        keys = keysOf(value, false);
        if (keys.length === 0) return `${braces[0]} <pending or settled> }`;
      } else if (isWeak(value)) {
        return `${ctor || 'WeakMap'} { <items unknown> }`;
      } else if (isBoxed(value)) {
        base = boxedBase(value);
        if (keys.length === 0) return base;
      } else {
        let tag = '';
        try {
          const t = value[toStringTag];
          if (typeof t === 'string' && t !== '' && t !== ctor) tag = `[${t}] `;
        } catch { /* a throwing getter: no tag */ }
        if (ctor === 'Object') {
          braces[0] = tag ? `Object ${tag}{` : '{';
        } else {
          braces[0] = `${ctor === null ? '[Object: null prototype]' : ctor} ${tag}{`;
        }
        if (keys.length === 0) {
          return ctor === 'Object' && !tag ? '{}' : `${braces[0]}}`;
        }
      }
    }
    if (noEntries) return `${braces[0]}${braces[1]}`;

    if (recurseTimes > ctx.depth) {
      return `[${ctor === null ? 'Object: null prototype' : (isArray(value) ? 'Array' : ctor)}]`;
    }
    recurseTimes += 1;
    push(ctx.seen, value);
    ctx.currentDepth = recurseTimes;
    let output = formatter(ctx, value, recurseTimes);
    for (let i = 0; i < keys.length; i++) {
      push(output, formatProperty(ctx, value, recurseTimes, keys[i], kObjectType));
    }
    pop(ctx.seen);

    if (ctx.circular !== undefined && mapHas(ctx.circular, value)) {
      const reference = `<ref *${mapGet(ctx.circular, value)}>`;
      base = base === '' ? reference : `${reference} ${base}`;
    }
    return reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value);
  }

  function isBoxed(value) {
    return brand(numberValueOf, value) || brand(stringValueOf, value) || brand(booleanValueOf, value) ||
      brand(bigintValueOf, value) || brand(symbolValueOf, value);
  }

  function boxedBase(value) {
    if (brand(numberValueOf, value)) return `[Number: ${formatNumber(numberValueOf(value))}]`;
    if (brand(stringValueOf, value)) return `[String: ${quote(stringValueOf(value))}]`;
    if (brand(booleanValueOf, value)) return `[Boolean: ${booleanValueOf(value)}]`;
    if (brand(bigintValueOf, value)) return `[BigInt: ${bigintValueOf(value)}n]`;
    return `[Symbol: ${symbolToString(symbolValueOf(value))}]`;
  }

  function formatProperty(ctx, value, recurseTimes, key, type) {
    let str;
    const desc = getOwnPropertyDescriptor(value, key) || { value: value[key], enumerable: true };
    if (desc.value !== undefined || !('get' in desc || 'set' in desc)) {
      ctx.indentationLvl += 2;
      str = formatValue(ctx, desc.value, recurseTimes);
      ctx.indentationLvl -= 2;
    } else if (desc.get !== undefined) {
      str = desc.set !== undefined ? '[Getter/Setter]' : '[Getter]';
    } else {
      str = desc.set !== undefined ? '[Setter]' : 'undefined';
    }
    if (type === kArrayExtrasType) return str;
    let name;
    if (typeof key === 'symbol') name = `[${symbolToString(key)}]`;
    else if (regexpTest(identifierRe, key)) name = key;
    else name = quote(key);
    return `${name}: ${str}`;
  }

  function formatObjectEntries() {
    return [];
  }

  function formatArrayEntries(ctx, value, recurseTimes) {
    const length = isArray(value) ? value.length : typedArrayLength(value);
    const output = [];
    const shown = MathMin(maxArrayLength, length);
    let i = 0;
    for (; i < length && output.length < shown; i++) {
      if (!hasOwn(value, i)) {
        let holes = 1;
        while (i + holes < length && !hasOwn(value, i + holes)) holes++;
        push(output, `<${holes} empty item${holes > 1 ? 's' : ''}>`);
        i += holes - 1;
        continue;
      }
      push(output, formatProperty(ctx, value, recurseTimes, i, kArrayExtrasType));
    }
    const remaining = length - i;
    if (remaining > 0) {
      push(output, `... ${remaining} more item${remaining > 1 ? 's' : ''}`);
    }
    return output;
  }

  function formatMapEntries(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    const it = mapEntries(value);
    for (let r = iteratorNext(it); !r.done; r = iteratorNext(it)) {
      if (output.length >= maxArrayLength) {
        push(output, `... ${mapSize(value) - maxArrayLength} more items`);
        break;
      }
      push(output, `${formatValue(ctx, r.value[0], recurseTimes)} => ${formatValue(ctx, r.value[1], recurseTimes)}`);
    }
    ctx.indentationLvl -= 2;
    return output;
  }

  function formatSetEntries(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    const it = setValues(value);
    for (let r = setIteratorNext(it); !r.done; r = setIteratorNext(it)) {
      if (output.length >= maxArrayLength) {
        push(output, `... ${setSize(value) - maxArrayLength} more items`);
        break;
      }
      push(output, formatValue(ctx, r.value, recurseTimes));
    }
    ctx.indentationLvl -= 2;
    return output;
  }

  // groupArrayElements lays out long arrays of short items in aligned
  // columns, as node does (numbers right-aligned, anything else left).
  function groupArrayElements(ctx, output, value) {
    let totalLength = 0;
    let maxLength = 0;
    let outputLength = output.length;
    if (value !== undefined && outputLength > 0 &&
        startsWith(output[outputLength - 1], '... ') && regexpTest(/ more items?$/, output[outputLength - 1])) {
      outputLength--;
    }
    const separatorSpace = 2;
    const dataLen = [];
    for (let i = 0; i < outputLength; i++) {
      const len = output[i].length;
      dataLen[i] = len;
      totalLength += len + separatorSpace;
      if (maxLength < len) maxLength = len;
    }
    const actualMax = maxLength + separatorSpace;
    if (actualMax * 3 + ctx.indentationLvl < breakLength &&
        (totalLength / actualMax > 5 || maxLength <= 6)) {
      const averageBias = MathSqrt(actualMax - totalLength / output.length);
      const biasedMax = MathMax(actualMax - 3 - averageBias, 1);
      const columns = MathMin(
        MathRound(MathSqrt(2.5 * biasedMax * outputLength) / biasedMax),
        MathFloor((breakLength - ctx.indentationLvl) / actualMax),
        compact * 4,
        15,
      );
      if (columns <= 1) return output;
      const maxLineLength = [];
      for (let i = 0; i < columns; i++) {
        let lineLength = 0;
        for (let j = i; j < outputLength; j += columns) {
          if (dataLen[j] > lineLength) lineLength = dataLen[j];
        }
        push(maxLineLength, lineLength + separatorSpace);
      }
      let numeric = true;
      for (let i = 0; i < outputLength; i++) {
        const t = typeof value[i];
        if (t !== 'number' && t !== 'bigint') {
          numeric = false;
          break;
        }
      }
      const tmp = [];
      for (let i = 0; i < outputLength; i += columns) {
        const max = MathMin(i + columns, outputLength);
        let str = '';
        let j = i;
        for (; j < max - 1; j++) {
          const cell = `${output[j]}, `;
          str += numeric ? padStart(cell, maxLineLength[j - i], ' ') : padEnd(cell, maxLineLength[j - i], ' ');
        }
        str += numeric ? padStart(output[j], maxLineLength[j - i] - separatorSpace, ' ') : output[j];
        push(tmp, str);
      }
      if (outputLength < output.length) push(tmp, output[outputLength]);
      return tmp;
    }
    return output;
  }

  function isBelowBreakLength(output, start, base) {
    let totalLength = output.length + start;
    if (totalLength + output.length > breakLength) return false;
    for (let i = 0; i < output.length; i++) {
      totalLength += output[i].length;
      if (totalLength > breakLength) return false;
    }
    return base === '' || !strIncludes(base, '\n');
  }

  function reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value) {
    const entries = output.length;
    if (extrasType === kArrayExtrasType && entries > 6) {
      output = groupArrayElements(ctx, output, value);
    }
    if (ctx.currentDepth - recurseTimes < compact && entries === output.length) {
      const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
      if (isBelowBreakLength(output, start, base)) {
        const joined = join(output, ', ');
        if (!strIncludes(joined, '\n')) {
          return `${base ? `${base} ` : ''}${braces[0]} ${joined} ${braces[1]}`;
        }
      }
    }
    const indentation = '\n' + repeat(' ', ctx.indentationLvl);
    return `${base ? `${base} ` : ''}${braces[0]}${indentation}  ${join(output, `,${indentation}  `)}${indentation}${braces[1]}`;
  }

  function inspect(value) {
    const ctx = { seen: [], circular: undefined, depth: 2, indentationLvl: 0, currentDepth: 0 };
    return formatValue(ctx, value, 0);
  }

  // format is node's util.format: printf-like directives in a leading
  // string, then the remaining arguments, strings raw and the rest inspected.
  function format(args) {
    let out = '';
    let a = 0;
    if (typeof args[0] === 'string' && args.length > 1 && strIncludes(args[0], '%')) {
      const f = args[0];
      a = 1;
      let last = 0;
      for (let i = 0; i < f.length - 1; i++) {
        if (f[i] !== '%') continue;
        const c = f[i + 1];
        let rep;
        if (c === '%') {
          out += slice(f, last, i) + '%';
          last = i + 2;
          i++;
          continue;
        }
        if (a >= args.length) continue;
        const arg = args[a];
        switch (c) {
          case 's':
            rep = typeof arg === 'string' ? arg
              : typeof arg === 'bigint' ? `${arg}n`
              : (typeof arg === 'object' && arg !== null) || typeof arg === 'symbol' ? inspect(arg)
              : formatPrimitive(arg);
            if (typeof arg === 'number') rep = formatNumber(arg);
            break;
          case 'd':
          case 'i': {
            if (typeof arg === 'bigint') rep = `${arg}n`;
            else if (typeof arg === 'symbol') rep = 'NaN';
            else {
              const n = c === 'i' ? MathTrunc(NumberCtor(arg)) : NumberCtor(arg);
              rep = formatNumber(n);
            }
            break;
          }
          case 'f':
            rep = typeof arg === 'symbol' ? 'NaN' : formatNumber(parseFloat(arg));
            break;
          case 'j':
            try { rep = jsonStringify(arg); } catch { rep = '[Circular]'; }
            rep = StringCtor(rep);
            break;
          case 'o':
          case 'O':
            rep = inspect(arg);
            break;
          case 'c':
            rep = '';
            break;
          default:
            continue;
        }
        out += slice(f, last, i) + rep;
        last = i + 2;
        i++;
        a++;
      }
      out += slice(f, last);
      if (a < args.length) out += ' ';
    }
    for (let i = a; i < args.length; i++) {
      const v = args[i];
      out += typeof v === 'string' ? v : inspect(v);
      if (i < args.length - 1) out += ' ';
    }
    return out;
  }

  function print(fd, args) {
    const parts = split(format(args) + '\n', '\0');
    for (let i = 0; i < parts.length; i++) {
      hostWrite(fd, parts[i], i < parts.length - 1);
    }
  }

  const console = {};
  const methods = {
    log: 1, info: 1, debug: 1, error: 2, warn: 2,
  };
  for (const name of objectKeys(methods)) {
    const fd = methods[name];
    defineProperty(console, name, {
      value: { [name](...args) { print(fd, args); } }[name],
      writable: true, enumerable: true, configurable: true,
    });
  }
  defineProperty(console, 'trace', {
    value: function trace(...args) {
      const err = new ErrorCtor();
      let stack = typeof err.stack === 'string' ? trimEnd(err.stack) : '';
      print(2, [`Trace${args.length ? ': ' + format(args) : ''}${stack ? '\n' + stack : ''}`]);
    },
    writable: true, enumerable: true, configurable: true,
  });

  // ---- timers: callbacks live here, due times in the host, which sleeps
  // until the next one (bounded by the execution's deadline) and calls fire.

  const timers = new MapCtor();
  let lastTimerId = 0;

  function addTimer(callback, delay, args, repeating) {
    if (typeof callback !== 'function') {
      throw new TypeErrorCtor(`The "callback" argument must be of type function. Received ${inspect(callback)}`);
    }
    delay = NumberCtor(delay);
    // As in node: anything that is not a delay from 1 ms to 2^31-1 ms is 1 ms.
    if (!(delay >= 1 && delay <= 2147483647)) delay = 1;
    // Every armed timer holds host memory outside the guest's memory limit.
    if (mapSize(timers) >= maxPendingTimers) {
      throw new RangeErrorCtor(`too many pending timers: capsule allows ${maxPendingTimers} at once; ` +
        'clear timers (clearTimeout, clearInterval) or let them fire before setting more');
    }
    const id = ++lastTimerId;
    mapSet(timers, id, { callback, args, delay, repeating });
    hostSchedule(id, delay);
    return id;
  }

  function clearTimer(id) {
    if (typeof id === 'number' && mapDelete(timers, id)) hostCancel(id);
  }

  function fire(id) {
    const t = mapGet(timers, id);
    if (t === undefined) return;
    if (t.repeating) hostSchedule(id, t.delay);
    else mapDelete(timers, id);
    apply(t.callback, undefined, t.args);
  }

  const globals = {
    console,
    setTimeout: function setTimeout(callback, delay, ...args) { return addTimer(callback, delay, args, false); },
    setInterval: function setInterval(callback, delay, ...args) { return addTimer(callback, delay, args, true); },
    clearTimeout: function clearTimeout(id) { clearTimer(id); },
    clearInterval: function clearInterval(id) { clearTimer(id); },
  };
  if (typeof global.queueMicrotask !== 'function') {
    globals.queueMicrotask = function queueMicrotask(callback) {
      if (typeof callback !== 'function') {
        throw new TypeErrorCtor(`The "callback" argument must be of type function. Received ${inspect(callback)}`);
      }
      promiseThen(promiseResolve(), () => callback());
    };
  }
  for (const name of objectKeys(globals)) {
    defineProperty(global, name, { value: globals[name], writable: true, enumerable: false, configurable: true });
  }
  // Node, Deno and browser globals that code might probe to find I/O: make
  // sure none is there.
  for (const name of ['require', 'process', 'fetch', 'XMLHttpRequest', 'Deno', 'Bun', 'module', 'exports']) {
    delete global[name];
  }

  // ---- what Run calls.

  // The result is rendered without calling the value's own code where
  // JavaScript allows it: no toJSON, no getter, no valueOf or toString,
  // no `then`. Only a Proxy's traps cannot be told apart from ordinary
  // property access; whatever they (or anything else) throw while rendering
  // is caught, so rendering never fails the run.

  const notJSON = {}; // thrown when JSON cannot hold a value exactly
  // ownData returns the value of value's own data property key, or throws
  // notJSON for an accessor (JSON.stringify would call its getter).
  function ownData(value, key) {
    const desc = getOwnPropertyDescriptor(value, key);
    if (desc === undefined) return undefined;
    if (!hasOwn(desc, 'value')) throw notJSON;
    return desc.value;
  }

  // dataOf copies value's data into fresh objects that JSON.stringify can
  // serialise without reaching any user code, when JSON holds the value
  // exactly: strings, finite numbers other than -0, booleans, null, and
  // plain arrays and objects (prototype Array.prototype, Object.prototype
  // or null) of such values, copied as null-prototype objects of their own
  // enumerable data properties, so that no toJSON can be found on them. It
  // throws notJSON for anything JSON would lose or change (undefined,
  // functions, symbols, BigInt, NaN, a Date, a Map, an instance of a class,
  // a hole in an array, a cycle) or could only show by running the value's
  // code (accessors). The native JSON.stringify then does the text, which
  // is many times faster than building it here.
  // itemOf is dataOf of value's own data property key; primitives, most
  // items, are handled here without the call.
  function itemOf(value, key, stack) {
    const desc = getOwnPropertyDescriptor(value, key);
    if (desc === undefined || !hasOwn(desc, 'value')) throw notJSON;
    const item = desc.value;
    switch (typeof item) {
      case 'string': case 'boolean': return item;
      case 'number': if (exactNumber(item)) return item; throw notJSON;
      default: return dataOf(item, stack);
    }
  }

  const exactNumber = (n) => NumberIsFinite(n) && !(n === 0 && 1 / n < 0);

  function dataOf(value, stack) {
    switch (typeof value) {
      case 'string': case 'boolean': return value;
      case 'number': if (exactNumber(value)) return value; throw notJSON;
      case 'object': break;
      default: throw notJSON;
    }
    if (value === null) return null;
    if (includes(stack, value)) throw notJSON;
    const proto = getPrototypeOf(value);
    const array = proto === ArrayProto && isArray(value);
    if (!array && proto !== ObjectProto && proto !== null) throw notJSON;
    push(stack, value);
    let copy;
    if (array) {
      const length = ownData(value, 'length');
      copy = setPrototypeOf([], null);
      for (let i = 0; i < length; i++) copy[i] = itemOf(value, i, stack);
    } else {
      copy = { __proto__: null };
      const keys = objectKeys(value);
      for (let i = 0; i < keys.length; i++) copy[keys[i]] = itemOf(value, keys[i], stack);
    }
    pop(stack);
    return copy;
  }

  // A BigInt within ±2^53 is a JSON number; beyond, its decimal string, so
  // that no reader loses digits.
  const maxSafeBig = BigIntCtor(2) ** BigIntCtor(53);

  // exactJSON returns value as JSON text where JSON holds it exactly, else
  // undefined.
  function exactJSON(value) {
    if (typeof value === 'bigint') {
      const digits = StringCtor(value);
      return value <= maxSafeBig && value >= -maxSafeBig ? digits : jsonStringify(digits);
    }
    try {
      return jsonStringify(dataOf(value, []));
    } catch (e) {
      if (e !== notJSON) throw e;
      return undefined;
    }
  }

  // typeName names value's type: its constructor's name (Array, Map,
  // Date, Uint8Array, a class), the wrapper's name for a primitive
  // (Number, String, Boolean, BigInt, Symbol), null or undefined.
  function typeName(value) {
    switch (typeof value) {
      case 'undefined': return 'undefined';
      case 'number': return 'Number';
      case 'string': return 'String';
      case 'boolean': return 'Boolean';
      case 'bigint': return 'BigInt';
      case 'symbol': return 'Symbol';
      default: break;
    }
    if (value === null) return 'null';
    const name = ctorName(value);
    return name === null ? 'Object' : name;
  }

  // rendered is the JSON text Run reads: the type's name, the inspect
  // form, and the exact JSON when there is one.
  function rendered(type, repr, json) {
    return '{"type":' + jsonStringify(type) + ',"repr":' + jsonStringify(repr) +
      (json === undefined ? '' : ',"json":' + json) + '}';
  }

  // render renders the result: its type, what node's REPL shows for it
  // (util.inspect), and its JSON where JSON holds it exactly. Nothing of
  // the value's own code runs (no toJSON, getter, valueOf or toString);
  // whatever a Proxy's traps throw is caught, so rendering never fails the
  // run. (A promise never gets here: the host waits for it, or renders it
  // with renderPromise.)
  function render(value) {
    let type = typeof value;
    let repr;
    let json;
    try { type = typeName(value); } catch { /* keep typeof */ }
    try { repr = inspect(value); } catch { repr = `[${typeof value} that cannot be shown: rendering it threw]`; }
    try { json = exactJSON(value); } catch { json = undefined; }
    return rendered(type, repr, json);
  }

  // renderPromise renders a promise the code left unawaited, given the
  // state the host found it in (0 pending, 2 rejected) and its reason.
  function renderPromise(state, reason) {
    if (state !== 2) return rendered('Promise', 'Promise { <pending> }');
    let shown;
    try { shown = inspect(reason); } catch { shown = `[${typeof reason}]`; }
    return rendered('Promise', `Promise { <rejected> ${shown} }`);
  }

  // describe returns {type, message, traceback} as JSON for a thrown value.
  function describe(err) {
    if (err !== null && typeof err === 'object' && (err instanceof ErrorCtor || 'stack' in err)) {
      let type = 'Error';
      let message = '';
      try { type = StringCtor(err.name); } catch { /* keep the default */ }
      try { message = StringCtor(err.message); } catch { /* keep the default */ }
      let traceback = '';
      try { traceback = errorBase(err); } catch { /* none */ }
      if (startsWith(traceback, '[') && !strIncludes(traceback, '\n')) traceback = slice(traceback, 1, -1);
      return jsonStringify({ type, message, traceback });
    }
    // A thrown non-error (throw 'x', throw 42): node reports it as
    // "Uncaught 'x'"; it has no stack.
    const message = typeof err === 'string' ? err : inspect(err);
    return jsonStringify({ type: 'Error', message, traceback: `Uncaught ${inspect(err)}` });
  }

  // unwrap takes the {value} object of an async script evaluation and
  // returns the value, reading only an own data property (the engine made
  // the object, but a setter on Object.prototype.value could have kept the
  // value from landing on it).
  function unwrap(wrapper) {
    const desc = getOwnPropertyDescriptor(wrapper, 'value');
    return desc !== undefined && hasOwn(desc, 'value') ? desc.value : undefined;
  }

  function setInputs(json) {
    defineProperty(global, 'inputs', { value: jsonParse(json), writable: true, enumerable: false, configurable: true });
  }

  // ---- files: the files passed in (the global `files`, defined only when
  // there are some) and the files returned (the global `outputs`).

  const freeze = Object.freeze;
  const Uint8ArrayCtor = Uint8Array;
  const typedArraySet = uncurry(getPrototypeOf(Uint8Array.prototype).set);
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedArrayBuffer = uncurry(getOwnPropertyDescriptor(typedArrayProto, 'buffer').get);
  const typedArrayByteOffset = uncurry(getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get);
  const typedArrayByteLength = uncurry(getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get);
  const dataViewBuffer = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'buffer').get);
  const dataViewByteOffset = uncurry(getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get);

  // Paths are defined, never assigned, so that "__proto__" is a path like
  // any other.
  let filesIn = null;

  // addFile adds a file passed in: kind 0 is text, 1 an ArrayBuffer of
  // bytes (seen as a Uint8Array).
  function addFile(path, value, kind) {
    if (filesIn === null) filesIn = {};
    if (kind === 1) value = new Uint8ArrayCtor(value);
    defineProperty(filesIn, path, { value, writable: true, enumerable: true, configurable: true });
  }

  // sealFiles freezes the files and makes them the global `files`.
  function sealFiles() {
    defineProperty(global, 'files', { value: freeze(filesIn), writable: false, enumerable: false, configurable: true });
  }

  const outputs = {};
  defineProperty(global, 'outputs', { value: outputs, writable: true, enumerable: false, configurable: true });

  // collectOutputs lists the files to return as [unlisted, path, kind,
  // value, ...]: kind 0 a string (NULs and all: the host reads it whole,
  // since searching a long string here costs far more), 1 an ArrayBuffer
  // of the bytes, 3 a value that
  // cannot be a file, with the reason; at most max of them, and the count
  // of the rest first. The files come from the global object's `outputs`
  // (whatever became of the binding globalThis): the object the call
  // started with, or a plain object put in its place (anything else under
  // that name is taken for the code's own variable). No getter is called:
  // a getter for `outputs` itself is an error that says so, and a getter
  // for a file's content refuses that file. The list has no prototype, so that no setter
  // the code put on Array.prototype sees or keeps its entries.
  function collectOutputs(max) {
    const out = setPrototypeOf([0], null);
    const desc = getOwnPropertyDescriptor(global, 'outputs');
    if (desc === undefined) return out;
    if (!hasOwn(desc, 'value')) {
      throw new ErrorCtor('the global outputs is a getter or setter, which is not called; ' +
        'leave outputs an object and assign files to it, such as outputs["a.txt"] = text');
    }
    const obj = desc.value;
    if (obj !== outputs && !isPlainObject(obj)) return out;
    const keys = objectKeys(obj);
    for (let i = 0; i < keys.length; i++) {
      if (out.length >= 1 + 3 * max) {
        out[0] = keys.length - i;
        break;
      }
      if (strIncludes(keys[i], '\0')) {
        push(out, escapeNUL(keys[i]), 3, 'the path contains a NUL byte');
        continue;
      }
      const d = getOwnPropertyDescriptor(obj, keys[i]);
      if (d === undefined) continue;
      if (!hasOwn(d, 'value')) {
        push(out, keys[i], 3, 'the content is behind a getter; assign it as a value');
        continue;
      }
      const v = d.value;
      if (typeof v === 'string') {
        push(out, keys[i], 0, v);
      } else if (isView(v)) {
        push(out, keys[i], 1, bytesOf(v));
      } else if (brand(arrayBufferByteLength, v)) {
        push(out, keys[i], 1, copyBytes(v, 0, arrayBufferByteLength(v)));
      } else {
        push(out, keys[i], 3, `the content must be a string or a Uint8Array, got ${describeType(v)}`);
      }
    }
    return out;
  }

  // escapeNUL writes each NUL of s as \0, for an error that names s.
  // (split and replace would look up methods the code can replace.)
  function escapeNUL(s) {
    let out = '';
    for (let i = 0; i < s.length; i++) {
      out += charCodeAt(s, i) === 0 ? '\\0' : s[i];
    }
    return out;
  }

  function isPlainObject(v) {
    if (v === null || typeof v !== 'object' || isArray(v)) return false;
    const proto = getPrototypeOf(v);
    return proto === ObjectProto || proto === null;
  }

  // bytesOf copies the bytes a typed array or DataView shows.
  function bytesOf(view) {
    if (brand(dataViewByteLength, view)) {
      return copyBytes(dataViewBuffer(view), dataViewByteOffset(view), dataViewByteLength(view));
    }
    return copyBytes(typedArrayBuffer(view), typedArrayByteOffset(view), typedArrayByteLength(view));
  }

  // copyBytes copies n bytes of buffer from off into a new ArrayBuffer.
  // ArrayBuffer.prototype.slice would build the copy with the buffer's
  // species constructor, which the code can replace; a view and a set
  // consult nothing the code can change.
  function copyBytes(buffer, off, n) {
    const copy = new Uint8ArrayCtor(n);
    typedArraySet(copy, new Uint8ArrayCtor(buffer, off, n));
    return typedArrayBuffer(copy);
  }

  function describeType(v) {
    if (v === null) return 'null';
    if (typeof v !== 'object') return typeof v;
    return ctorName(v) || 'an object';
  }

  return { fire, render, renderPromise, describe, unwrap, setInputs, addFile, sealFiles, collectOutputs, inspect, format };
})
