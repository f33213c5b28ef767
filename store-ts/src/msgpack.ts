/**
 * Reading the checkpoints LangGraph's Python serializer writes (`"msgpack"`), so that a thread
 * checkpointed from Python resumes from TypeScript.
 *
 * The MessagePack format is decoded whole; LangGraph's extension types (a Python object as its
 * module, name and arguments) become what LangGraph JS's serializer revives: a LangChain
 * object (`langchain_core.*`, a message say) the `{lc: 1, type: "constructor"}` record of the
 * same class, a date or a UUID its text, any other object its fields.
 */

const EXT_CONSTRUCTOR_SINGLE_ARG = 0;
const EXT_CONSTRUCTOR_POS_ARGS = 1;
const EXT_CONSTRUCTOR_KW_ARGS = 2;
const EXT_METHOD_SINGLE_ARG = 3;
const EXT_PYDANTIC_V1 = 4;
const EXT_PYDANTIC_V2 = 5;
const EXT_NUMPY_ARRAY = 6;

/** A Python object from an extension: what LangGraph JS revives in its place. */
function pythonObject(type: number, parts: unknown[]): unknown {
  const [module, name, args] = parts as [string, string, unknown];
  if (type === EXT_CONSTRUCTOR_SINGLE_ARG || type === EXT_METHOD_SINGLE_ARG) {
    return args; // a UUID's text, a date's ISO text, a set's or an enum's value
  }
  if (type === EXT_CONSTRUCTOR_POS_ARGS) return args;
  if (type === EXT_NUMPY_ARRAY) return args;
  if (
    (type === EXT_CONSTRUCTOR_KW_ARGS || type === EXT_PYDANTIC_V1 || type === EXT_PYDANTIC_V2) &&
    typeof module === "string" &&
    module.startsWith("langchain_core.")
  ) {
    const path = module.split(".").slice(0, 2);
    return { lc: 1, type: "constructor", id: [...path, name], kwargs: args };
  }
  return args;
}

class Reader {
  private offset = 0;
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private take(n: number): Uint8Array {
    if (this.offset + n > this.bytes.length) throw new Error("msgpack data is truncated");
    const slice = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return slice;
  }

  private uint(n: 1 | 2 | 4 | 8): number {
    const at = this.offset;
    this.take(n);
    if (n === 1) return this.view.getUint8(at);
    if (n === 2) return this.view.getUint16(at);
    if (n === 4) return this.view.getUint32(at);
    return Number(this.view.getBigUint64(at));
  }

  private int(n: 1 | 2 | 4 | 8): number {
    const at = this.offset;
    this.take(n);
    if (n === 1) return this.view.getInt8(at);
    if (n === 2) return this.view.getInt16(at);
    if (n === 4) return this.view.getInt32(at);
    return Number(this.view.getBigInt64(at));
  }

  private text(n: number): string {
    return new TextDecoder().decode(this.take(n));
  }

  private array(n: number): unknown[] {
    const items: unknown[] = [];
    for (let i = 0; i < n; i++) items.push(this.value());
    return items;
  }

  private map(n: number): Record<string, unknown> {
    const object: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.value();
      object[typeof key === "string" ? key : JSON.stringify(key)] = this.value();
    }
    return object;
  }

  private ext(n: number): unknown {
    const type = this.int(1);
    const data = this.take(n);
    const parts = new Reader(data).value();
    return Array.isArray(parts) ? pythonObject(type, parts) : parts;
  }

  value(): unknown {
    const byte = this.uint(1);
    if (byte <= 0x7f) return byte;
    if (byte >= 0xe0) return byte - 0x100;
    if ((byte & 0xf0) === 0x80) return this.map(byte & 0x0f);
    if ((byte & 0xf0) === 0x90) return this.array(byte & 0x0f);
    if ((byte & 0xe0) === 0xa0) return this.text(byte & 0x1f);
    switch (byte) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.take(this.uint(1)).slice();
      case 0xc5:
        return this.take(this.uint(2)).slice();
      case 0xc6:
        return this.take(this.uint(4)).slice();
      case 0xc7:
        return this.ext(this.uint(1));
      case 0xc8:
        return this.ext(this.uint(2));
      case 0xc9:
        return this.ext(this.uint(4));
      case 0xca: {
        const at = this.offset;
        this.take(4);
        return this.view.getFloat32(at);
      }
      case 0xcb: {
        const at = this.offset;
        this.take(8);
        return this.view.getFloat64(at);
      }
      case 0xcc:
        return this.uint(1);
      case 0xcd:
        return this.uint(2);
      case 0xce:
        return this.uint(4);
      case 0xcf:
        return this.uint(8);
      case 0xd0:
        return this.int(1);
      case 0xd1:
        return this.int(2);
      case 0xd2:
        return this.int(4);
      case 0xd3:
        return this.int(8);
      case 0xd4:
        return this.ext(1);
      case 0xd5:
        return this.ext(2);
      case 0xd6:
        return this.ext(4);
      case 0xd7:
        return this.ext(8);
      case 0xd8:
        return this.ext(16);
      case 0xd9:
        return this.text(this.uint(1));
      case 0xda:
        return this.text(this.uint(2));
      case 0xdb:
        return this.text(this.uint(4));
      case 0xdc:
        return this.array(this.uint(2));
      case 0xdd:
        return this.array(this.uint(4));
      case 0xde:
        return this.map(this.uint(2));
      case 0xdf:
        return this.map(this.uint(4));
      default:
        throw new Error(`msgpack byte 0x${byte.toString(16)} is not a value`);
    }
  }
}

/** The JSON-like value of LangGraph Python's `"msgpack"` bytes. */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  return new Reader(bytes).value();
}
