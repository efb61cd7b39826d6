//! The Boa engine of a plugin instance: its realm (the `console`,
//! `require` and `process` shims, boa_runtime's `structuredClone`,
//! `TextEncoder`/`TextDecoder` and `atob`/`btoa`, and, on first use,
//! `buffer.js` and `intl.js`: `Buffer` and Intl as Node answers it), compiled snippets and modules, promises
//! settled, thrown values as promptfoo shows them.

use std::cell::RefCell;
use std::collections::HashMap;

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::JsPromise;
use boa_engine::property::Attribute;
use boa_engine::{
    Context, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue, Module, NativeFunction,
    Source, js_string,
};
use evalhost_plugin_sdk::GradeError;

use crate::snippet::Script;

/// Calls deeper than this throw `RangeError` (well inside the plugin's
/// stack, so unbounded recursion fails the assertion instead of trapping).
const RECURSION_LIMIT: usize = 1000;

/// Most compiled snippets and modules kept per instance.
const CACHE_CAP: usize = 256;

thread_local! {
    /// Leaked, never dropped: Boa's collector lives in thread-locals of its
    /// own, and a context dropped after them (at thread exit) corrupts the
    /// heap. A plugin instance's one thread never exits.
    static ENGINE: &'static RefCell<Option<Engine>> = Box::leak(Box::new(RefCell::new(None)));
    /// What `console.*` printed during the current call.
    pub(crate) static CONSOLE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// One engine per plugin instance. The plugin is not stateless: the host
/// makes a fresh instance (so a fresh realm) for every call, so nothing a
/// snippet does to the realm reaches another test.
pub(crate) struct Engine {
    pub(crate) ctx: Context,
    /// Functions compiled from snippet bodies, by body.
    snippets: HashMap<String, JsObject>,
    /// Module exports (promptfoo's `mod`), by source text.
    modules: HashMap<String, JsValue>,
    /// The `process` shim.
    pub(crate) process: JsValue,
    /// The global object's own keys once the engine started: what a snippet
    /// adds (`globalThis.x = …`, an undeclared assignment) is deleted after
    /// its call, so that no grade depends on which instance ran before.
    baseline: std::collections::HashSet<boa_engine::property::PropertyKey>,
}

impl Engine {
    fn new() -> JsResult<Self> {
        let mut ctx = Context::default();
        ctx.runtime_limits_mut()
            .set_recursion_limit(RECURSION_LIMIT);
        // Node's `structuredClone`, `TextEncoder`/`TextDecoder` and
        // `atob`/`btoa`, from Boa's own runtime (pure: no I/O).
        boa_runtime::register_extensions(
            (
                boa_runtime::extensions::Base64Extension,
                boa_runtime::extensions::EncodingExtension,
                boa_runtime::extensions::StructuredCloneExtension,
            ),
            None,
            &mut ctx,
        )?;
        let console = {
            let mut init = ObjectInitializer::new(&mut ctx);
            for name in ["log", "info", "warn", "error", "debug", "trace"] {
                init.function(
                    NativeFunction::from_fn_ptr(console_print),
                    JsString::from(name),
                    0,
                );
            }
            init.build()
        };
        ctx.register_global_property(js_string!("console"), console, Attribute::all())?;
        ctx.register_global_builtin_callable(
            js_string!("require"),
            1,
            NativeFunction::from_fn_ptr(require),
        )?;
        let process = ctx.eval(Source::from_bytes(
            "({ env: Object.freeze({}), argv: [], platform: 'wasi', mainModule: { require: globalThis.require, exports: {} } })",
        ))?;
        // What Node gives an assertion that Boa does not (`Buffer`), and
        // Intl as Node answers it: pure JavaScript, evaluated on first use
        // (a realm is made for every call; most never read them).
        lazy::install(&mut ctx)?;
        let baseline = ctx
            .global_object()
            .own_property_keys(&mut ctx)?
            .into_iter()
            .collect();
        Ok(Self {
            ctx,
            snippets: HashMap::new(),
            modules: HashMap::new(),
            process,
            baseline,
        })
    }

    /// Deletes the globals a call added.
    fn reset_globals(&mut self) {
        let global = self.ctx.global_object();
        let Ok(keys) = global.own_property_keys(&mut self.ctx) else {
            return;
        };
        for key in keys {
            if !self.baseline.contains(&key) {
                let _ = global.delete_property_or_throw(key, &mut self.ctx);
            }
        }
    }

    /// `new Function("output", "context", "process", body)`, cached.
    pub(crate) fn snippet(&mut self, body: &str) -> JsResult<JsObject> {
        self.snippet_of(&["output", "context", "process"], body)
    }

    /// `new Function(...params, body)`, cached.
    pub(crate) fn snippet_of(&mut self, params: &[&str], body: &str) -> JsResult<JsObject> {
        let key = format!("{}\u{0}{body}", params.join(","));
        if let Some(f) = self.snippets.get(&key) {
            return Ok(f.clone());
        }
        // The realm's own `Function`, never `globalThis.Function`: a snippet
        // may replace the global, not what compiles the next one.
        let ctor = self
            .ctx
            .intrinsics()
            .constructors()
            .function()
            .constructor();
        let args: Vec<JsValue> = params
            .iter()
            .map(|p| JsString::from(*p).into())
            .chain(std::iter::once(JsString::from(body).into()))
            .collect();
        let f = ctor.call(&JsValue::undefined(), &args, &mut self.ctx)?;
        let f = f
            .as_object()
            .ok_or_else(|| JsNativeError::typ().with_message("not a function"))?
            .clone();
        if self.snippets.len() >= CACHE_CAP {
            self.snippets.clear();
        }
        self.snippets.insert(key, f.clone());
        Ok(f)
    }

    /// A script file's `mod` as promptfoo's `importModule` computes it:
    /// `default.default || default || the module`.
    pub(crate) fn module(&mut self, script: &Script) -> JsResult<JsValue> {
        if let Some(m) = self.modules.get(&script.source) {
            return Ok(m.clone());
        }
        let ctx = &mut self.ctx;
        let mod_value = if script.esm {
            let module = Module::parse(Source::from_bytes(script.source.as_bytes()), None, ctx)?;
            let promise = module.load_link_evaluate(ctx);
            settle_promise(&promise, ctx)?;
            let ns: JsValue = module.namespace(ctx).into();
            pick_default(&ns, ctx)?
        } else {
            // CommonJS, as Node's `import()` of it sees it: `default` is
            // `module.exports`.
            let wrapper = format!(
                "(function (module, exports, require) {{\n{}\n;return module.exports;\n}})",
                script.source
            );
            let f = ctx.eval(Source::from_bytes(wrapper.as_bytes()))?;
            let module = ctx.eval(Source::from_bytes("({ exports: {} })"))?;
            let exports = module
                .as_object()
                .map(|m| m.get(js_string!("exports"), ctx))
                .transpose()?
                .unwrap_or_default();
            let require = ctx.global_object().get(js_string!("require"), ctx)?;
            let exported = f
                .as_callable()
                .ok_or_else(|| JsNativeError::typ().with_message("module wrapper"))?
                .call(&JsValue::undefined(), &[module, exports, require], ctx)?;
            let ns = ObjectInitializer::new(ctx)
                .property(js_string!("default"), exported, Attribute::all())
                .build();
            pick_default(&ns.into(), ctx)?
        };
        if self.modules.len() >= CACHE_CAP {
            self.modules.clear();
        }
        self.modules
            .insert(script.source.clone(), mod_value.clone());
        Ok(mod_value)
    }
}

/// `x.default.default || x.default || x`.
fn pick_default(ns: &JsValue, ctx: &mut Context) -> JsResult<JsValue> {
    let get = |v: &JsValue, ctx: &mut Context| -> JsResult<JsValue> {
        match v.as_object() {
            Some(o) => o.get(js_string!("default"), ctx),
            None => Ok(JsValue::undefined()),
        }
    };
    let d = get(ns, ctx)?;
    let dd = get(&d, ctx)?;
    Ok(if dd.to_boolean() {
        dd
    } else if d.to_boolean() {
        d
    } else {
        ns.clone()
    })
}

fn console_print(_this: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let mut line = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        match a.as_string() {
            Some(s) => line.push_str(&s.to_std_string_escaped()),
            None => match a.to_json(ctx) {
                Ok(Some(j)) if a.is_object() => line.push_str(&j.to_string()),
                _ => line.push_str(&a.display().to_string()),
            },
        }
    }
    CONSOLE.with(|c| {
        let mut c = c.borrow_mut();
        // Bounded: a snippet that prints in a loop keeps its first 64 KiB.
        if c.len() < 64 << 10 {
            c.push_str(&line);
            c.push('\n');
        }
    });
    Ok(JsValue::undefined())
}

fn require(_this: &JsValue, args: &[JsValue], _ctx: &mut Context) -> JsResult<JsValue> {
    let name = args
        .first()
        .map(|a| match a.as_string() {
            Some(s) => s.to_std_string_escaped(),
            None => a.display().to_string(),
        })
        .unwrap_or_default();
    Err(JsNativeError::error()
        .with_message(format!(
            "Cannot find module '{name}': the evalhost sandbox provides no modules (no files, network or environment)"
        ))
        .into())
}

/// Runs the job queue until `promise` settles.
fn settle_promise(promise: &JsPromise, ctx: &mut Context) -> JsResult<JsValue> {
    ctx.run_jobs()?;
    match promise.state() {
        PromiseState::Fulfilled(v) => Ok(v),
        PromiseState::Rejected(e) => Err(JsError::from_opaque(e)),
        PromiseState::Pending => Err(JsNativeError::error()
            .with_message("the returned promise never settled")
            .into()),
    }
}

/// A value, awaited when it is a promise (promptfoo's `validateResult`
/// awaits it).
pub(crate) fn settle(value: JsValue, ctx: &mut Context) -> JsResult<JsValue> {
    match value
        .as_object()
        .and_then(|o| JsPromise::from_object(o.clone()).ok())
    {
        Some(p) => settle_promise(&p, ctx),
        None => Ok(value),
    }
}

/// A thrown value as promptfoo shows it: its message, and V8's stack's
/// first line (`Name: message`; Boa keeps no stack).
pub(crate) fn thrown(err: &JsError, ctx: &mut Context) -> (String, String) {
    // Boa's runtime limits are engine errors (JavaScript cannot catch
    // them); V8 throws `RangeError` where Boa hits its recursion limit.
    if err.to_string().starts_with("RuntimeLimitError") {
        let message = "Maximum call stack size exceeded".to_owned();
        return (message.clone(), format!("RangeError: {message}"));
    }
    if let Ok(native) = err.try_native(ctx) {
        let message = native.message().to_owned();
        let name = match native.kind() {
            boa_engine::JsNativeErrorKind::Type => "TypeError",
            boa_engine::JsNativeErrorKind::Range => "RangeError",
            boa_engine::JsNativeErrorKind::Reference => "ReferenceError",
            boa_engine::JsNativeErrorKind::Syntax => "SyntaxError",
            boa_engine::JsNativeErrorKind::Eval => "EvalError",
            boa_engine::JsNativeErrorKind::Uri => "URIError",
            _ => "Error",
        };
        let stack = format!("{name}: {message}");
        return (message, stack);
    }
    let value = err.clone().into_opaque(ctx).unwrap_or_default();
    let message = value
        .as_object()
        .and_then(|o| o.get(js_string!("message"), ctx).ok())
        .filter(|m| !m.is_undefined())
        .unwrap_or_else(|| value.clone());
    let message = message
        .to_string(ctx)
        .map(|s| s.to_std_string_escaped())
        .unwrap_or_default();
    (message.clone(), message)
}

/// Runs `f` on this instance's engine, starting it on first use.
pub(crate) fn with_engine<T>(
    f: impl FnOnce(&mut Engine) -> Result<T, GradeError>,
) -> Result<T, GradeError> {
    ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(Engine::new().map_err(|e| {
                GradeError::Failed(format!("the JavaScript engine did not start: {e}"))
            })?);
        }
        let engine = slot.as_mut().expect("set above");
        let result = f(engine);
        engine.reset_globals();
        result
    })
}

/// `buffer.js` and `intl.js`, each evaluated the first time a script reads
/// one of the properties it defines or replaces: until then each is an
/// accessor whose getter puts the originals back, evaluates the file (which
/// replaces them with data properties) and returns what the script asked
/// for. Parsing them for every realm cost ~4 ms a call.
mod lazy {
    use std::cell::RefCell;

    use boa_engine::object::FunctionObjectBuilder;
    use boa_engine::property::PropertyDescriptor;
    use boa_engine::{Context, JsObject, JsResult, JsString, JsValue, NativeFunction, Source};

    const BUFFER: &str = include_str!("buffer.js");
    const INTL: &str = include_str!("intl.js");

    /// The lazy properties: (file, the object's path, the property).
    const PROPS: &[(usize, &str, &str)] = &[
        (0, "globalThis", "Buffer"),
        (0, "globalThis", "structuredClone"),
        (1, "globalThis", "Intl"),
        (1, "Number.prototype", "toLocaleString"),
        (1, "BigInt.prototype", "toLocaleString"),
        (1, "String.prototype", "localeCompare"),
        (1, "Array.prototype", "toLocaleString"),
        (1, "Date.prototype", "toLocaleString"),
        (1, "Date.prototype", "toLocaleDateString"),
        (1, "Date.prototype", "toLocaleTimeString"),
    ];

    /// A lazy property's object, and its own value before (none: it had
    /// none).
    type Original = (JsObject, Option<JsValue>);

    thread_local! {
        /// Per property of [`PROPS`], while it is lazy.
        static ORIGINALS: RefCell<Vec<Option<Original>>> = const { RefCell::new(Vec::new()) };
    }

    /// Makes every property of [`PROPS`] lazy.
    pub(super) fn install(ctx: &mut Context) -> JsResult<()> {
        // Node 20 has no Temporal (Boa's intl build brings one).
        ctx.global_object()
            .delete_property_or_throw(JsString::from("Temporal"), ctx)?;
        let mut originals = Vec::new();
        for (i, &(_, path, name)) in PROPS.iter().enumerate() {
            let target = ctx
                .eval(Source::from_bytes(path))?
                .as_object()
                .expect("a built-in object")
                .clone();
            let key = JsString::from(name);
            let original = target
                .has_own_property(key.clone(), ctx)?
                .then(|| target.get(key.clone(), ctx))
                .transpose()?;
            let getter = FunctionObjectBuilder::new(
                ctx.realm(),
                NativeFunction::from_copy_closure(move |_, _, ctx| get(i, ctx)),
            )
            .length(0)
            .build();
            let setter = FunctionObjectBuilder::new(
                ctx.realm(),
                NativeFunction::from_copy_closure(move |_, args, ctx| {
                    // Assigned before read: the script's value wins.
                    get(i, ctx)?;
                    let (_, path, name) = PROPS[i];
                    let target = ctx.eval(Source::from_bytes(path))?;
                    if let Some(t) = target.as_object() {
                        t.set(
                            JsString::from(name),
                            args.first().cloned().unwrap_or_default(),
                            true,
                            ctx,
                        )?;
                    }
                    Ok(JsValue::undefined())
                }),
            )
            .length(1)
            .build();
            target.define_property_or_throw(
                key,
                PropertyDescriptor::builder()
                    .get(getter)
                    .set(setter)
                    .enumerable(false)
                    .configurable(true),
                ctx,
            )?;
            originals.push(Some((target, original)));
        }
        ORIGINALS.with(|o| *o.borrow_mut() = originals);
        Ok(())
    }

    /// The getter of property `i`: its file evaluated (once), then its
    /// value.
    fn get(i: usize, ctx: &mut Context) -> JsResult<JsValue> {
        let file = PROPS[i].0;
        // Put back the originals of the file's properties, then run it.
        let restore: Vec<(usize, JsObject, Option<JsValue>)> = ORIGINALS.with(|o| {
            let mut o = o.borrow_mut();
            PROPS
                .iter()
                .enumerate()
                .filter(|(_, p)| p.0 == file)
                .filter_map(|(j, _)| o.get_mut(j).and_then(Option::take).map(|(t, v)| (j, t, v)))
                .collect()
        });
        if !restore.is_empty() {
            for (j, target, original) in restore {
                let key = JsString::from(PROPS[j].2);
                match original {
                    Some(v) => {
                        target.define_property_or_throw(
                            key,
                            PropertyDescriptor::builder()
                                .value(v)
                                .writable(true)
                                .enumerable(false)
                                .configurable(true),
                            ctx,
                        )?;
                    }
                    None => {
                        target.delete_property_or_throw(key, ctx)?;
                    }
                }
            }
            ctx.eval(Source::from_bytes(if file == 0 { BUFFER } else { INTL }))?;
        }
        let (_, path, name) = PROPS[i];
        let target = ctx.eval(Source::from_bytes(path))?;
        match target.as_object() {
            Some(t) => t.get(JsString::from(name), ctx),
            None => Ok(JsValue::undefined()),
        }
    }
}
