// Reading a pipeline YAML file: validation of every key against the format
// of pipeline.h, expansion of ${variables}, tool lookup, and validation of
// the passes (by the pass registry of libs/transform) and of the target (by
// libs/target's Target) and of an mlcc tool's arguments (by the tool) — so that a bad pipeline fails at its
// FILE:LINE:COL before anything runs.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "mlcc/host/process.h"
#include "mlcc/pipeline/build.h"
#include "mlcc/pipeline/pipeline.h"
#include "mlcc/support/file_io.h"
#include "mlcc/target/target.h"
#include "mlcc/transform/pass.h"

namespace mlcc::pipeline {

namespace fs = std::filesystem;

const std::vector<std::string>& mlccToolNames() {
  static const std::vector<std::string> names = {
      "mlcc-import", "mlcc-fuse", "mlcc-legalize", "mlcc-schedule", "mlcc-tune", "mlcc-codegen", "mlcc-link"};
  return names;
}

std::vector<std::string> stageCommand(const Stage& stage, const std::string& input,
                                      const std::string& output) {
  std::vector<std::string> argv = {stage.tool_path, input, "-o", output};
  if (!stage.passes.empty()) {
    argv.push_back("--passes");
    argv.push_back(stage.passes);
  }
  argv.insert(argv.end(), stage.args.begin(), stage.args.end());
  return argv;
}

namespace {

bool isExecutableFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

// fs::exists without throwing (a name too long for the file system, say,
// is not there).
bool pathExists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string findInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (isExecutableFile(p)) return fs::absolute(p).lexically_normal().string();
  }
  return "";
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// Passes a tool takes with --passes; custom tools take any.
bool takesPasses(const std::string& tool) { return tool == "mlcc-fuse" || tool == "mlcc-legalize"; }

class Loader {
 public:
  Loader(std::string path, const LoadOptions& options) : path_(std::move(path)), options_(options) {}

  Pipeline load() {
    text_ = readInput(path_);
    YAML::Node root;
    try {
      root = YAML::Load(text_);
    } catch (const YAML::Exception& e) {
      fail(e.mark, "", "invalid YAML: " + e.msg);
    }
    if (!root.IsMap()) fail(root.Mark(), "", "a pipeline is a map with the keys name, target and stages");
    checkKeys(root, "", {"name", "description", "target", "vars", "stages"});

    Pipeline p;
    p.path = path_;
    p.name = requiredScalar(root, "name", "");
    if (root["description"]) p.description = scalar(root["description"], "description");
    const fs::path yaml_dir = fs::absolute(path_).parent_path().lexically_normal();
    vars_["name"] = p.name;
    vars_["pipeline_dir"] = yaml_dir.string();
    build_dir_ = options_.build_dir.empty()  // the default: MODEL's stem + "." + the pipeline's name
                     ? fs::absolute(fs::path(options_.input).stem().string() + "." + p.name)
                           .lexically_normal()
                           .string()
                     : options_.build_dir;
    refuseControlCharacters(options_.input, "--input");
    refuseControlCharacters(build_dir_, "--build-dir");
    for (const auto& [name, value] : options_.overrides) refuseControlCharacters(value, "--set " + name);
    vars_["build_dir"] = build_dir_;
    vars_["input"] = options_.input;
    readVars(root);
    readTarget(root);
    p.target = vars_["target"];
    p.vars = vars_;
    p.build_dir = build_dir_;

    const YAML::Node stages = root["stages"];
    if (!stages) fail(root.Mark(), "stages", "missing: a pipeline needs a list of stages");
    if (!stages.IsSequence() || stages.size() == 0)
      fail(stages.Mark(), "stages", "must be a non-empty list of stages");
    std::set<std::string> names, outputs;
    for (size_t i = 0; i < stages.size(); ++i) {
      Stage s = readStage(stages[i], "stages[" + std::to_string(i) + "]", yaml_dir);
      if (!names.insert(s.name).second)
        fail(stages[i]["name"].Mark(), "stages[" + std::to_string(i) + "].name",
             "duplicate stage name '" + s.name + "'");
      if (!outputs.insert(s.output).second)
        fail(stages[i].Mark(), "stages[" + std::to_string(i) + "].output",
             "two stages write '" + s.output + "'; give one an `output:`");
      p.stages.push_back(std::move(s));
    }
    return p;
  }

 private:
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& key, const std::string& msg) const {
    throw errorInText(path_, text_, mark.line, mark.column, (key.empty() ? "" : key + ": ") + msg);
  }

  void checkKeys(const YAML::Node& map, const std::string& where,
                 const std::vector<std::string>& allowed) const {
    for (const auto& kv : map) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        fail(kv.first.Mark(), where.empty() ? k : where + "." + k,
             "unknown key (expected " + joined(allowed) + ")");
    }
  }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n.Mark(), key, "must be a string");
    return n.Scalar();
  }

  std::string requiredScalar(const YAML::Node& map, const std::string& k, const std::string& where) const {
    const std::string key = where.empty() ? k : where + "." + k;
    if (!map[k]) fail(map.Mark(), key, "missing");
    std::string v = scalar(map[k], key);
    if (v.empty()) fail(map[k].Mark(), key, "must not be empty");
    return v;
  }

  // ${NAME} -> the variable's value; $$ -> $.
  std::string expand(const std::string& text, const YAML::Node& at, const std::string& key) const {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '$' || i + 1 >= text.size()) {
        out += text[i];
      } else if (text[i + 1] == '$') {
        out += '$';
        ++i;
      } else if (text[i + 1] == '{') {
        size_t close = text.find('}', i + 2);
        if (close == std::string::npos) fail(at.Mark(), key, "'${' without a closing '}' in '" + text + "'");
        std::string name = text.substr(i + 2, close - i - 2);
        if (list_vars_.count(name))
          fail(
              at.Mark(), key,
              "'${" + name + "}' is a list: it can only be a whole item of args, not part of '" + text + "'");
        auto it = vars_.find(name);
        if (it == vars_.end()) {
          std::vector<std::string> known;
          for (const auto& [k, v] : vars_) known.push_back(k);
          for (const auto& [k, v] : list_vars_) known.push_back(k);
          std::sort(known.begin(), known.end());
          fail(at.Mark(), key, "undefined variable '${" + name + "}' (variables: " + joined(known) + ")");
        }
        out += it->second;
        i = close;
      } else {
        out += text[i];
      }
    }
    if (hasControlCharacter(out))
      fail(at.Mark(), key,
           "contains a control character (a newline, say), which a command in build.ninja cannot carry");
    return out;
  }

  void readVars(const YAML::Node& root) {
    static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
    std::set<std::string> declared = {"target"};
    if (const YAML::Node vars = root["vars"]) {
      if (!vars.IsMap()) fail(vars.Mark(), "vars", "must be a map of NAME: value");
      for (const auto& kv : vars) {
        const std::string name = kv.first.Scalar();
        const std::string key = "vars." + name;
        if (!std::regex_match(name, ident))
          fail(kv.first.Mark(), key, "a variable name is [A-Za-z_][A-Za-z0-9_]*");
        if (vars_.count(name) || name == "target")
          fail(kv.first.Mark(), key, "'" + name + "' is a built-in variable");
        if (kv.second.IsSequence()) {  // a list: spliced into args
          auto& items = list_vars_[name];
          for (size_t i = 0; i < kv.second.size(); ++i) {
            const std::string ikey = key + "[" + std::to_string(i) + "]";
            items.push_back(expand(scalar(kv.second[i], ikey), kv.second[i], ikey));
          }
        } else if (kv.second.IsScalar() || kv.second.IsNull()) {
          vars_[name] = kv.second.IsNull() ? "" : expand(kv.second.Scalar(), kv.second, key);
        } else {
          fail(kv.second.Mark(), key, "must be a string or a list of strings");
        }
        declared.insert(name);
      }
    }
    for (const auto& [name, value] : options_.overrides) {
      if (!declared.count(name))
        throw Error("--set " + name + ": the pipeline " + path_ + " has no variable '" + name +
                    "' (it declares: " + joined({declared.begin(), declared.end()}) + ")");
      if (auto list = list_vars_.find(name); list != list_vars_.end()) {  // the value's words
        list->second.clear();
        std::istringstream words(value);
        for (std::string w; words >> w;) list->second.push_back(w);
      } else if (name != "target") {
        vars_[name] = value;
      }
    }
  }

  void readTarget(const YAML::Node& root) {
    std::string target = "llvm";
    YAML::Node at = root["target"];
    if (at) target = expand(scalar(at, "target"), at, "target");
    if (auto it = options_.overrides.find("target"); it != options_.overrides.end()) target = it->second;
    try {
      (void)target::Target::parse(target);
    } catch (const Error& e) {
      if (at && !options_.overrides.count("target")) fail(at.Mark(), "target", e.message());
      throw Error("--set target=" + target + ": " + e.message());
    }
    vars_["target"] = target;
  }

  Stage readStage(const YAML::Node& n, const std::string& key, const fs::path& yaml_dir) {
    if (!n.IsMap()) fail(n.Mark(), key, "a stage is a map with name, tool and optional passes, args, output");
    checkKeys(n, key, {"name", "tool", "passes", "args", "output"});
    Stage s;
    s.loc = SourceLoc{path_, n.Mark().line + 1, n.Mark().column + 1};
    s.name = requiredScalar(n, "name", key);
    static const std::regex stage_name("[A-Za-z0-9_][A-Za-z0-9_.-]*");
    if (!std::regex_match(s.name, stage_name))
      fail(n["name"].Mark(), key + ".name",
           "a stage name is [A-Za-z0-9_][A-Za-z0-9_.-]*, not '" + s.name + "'");
    resolveTool(s, n["tool"] ? n["tool"] : n, key + ".tool", n["tool"].IsDefined(), yaml_dir);
    if (const YAML::Node args = n["args"]) {
      if (!args.IsSequence()) fail(args.Mark(), key + ".args", "must be a list of arguments");
      static const std::regex whole_var("\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}");
      for (size_t i = 0; i < args.size(); ++i) {
        const std::string akey = key + ".args[" + std::to_string(i) + "]";
        const std::string raw = scalar(args[i], akey);
        std::smatch m;
        if (std::regex_match(raw, m, whole_var) && list_vars_.count(m[1])) {  // a list: its items
          for (const auto& item : list_vars_.at(m[1])) s.args.push_back(item);
        } else {
          s.args.push_back(expand(raw, args[i], akey));
        }
      }
    }
    // The pass plugins an mlcc tool loads (--load-pass-plugin FILE, relative
    // to the build directory where the stage runs) define passes it may name.
    for (size_t i = 0; s.is_mlcc_tool && i + 1 < s.args.size(); ++i)
      if (s.args[i] == "--load-pass-plugin") {
        try {
          transform::loadPassPlugin(resolvePath(build_dir_, s.args[i + 1]));
        } catch (const Error& e) {
          fail(n["args"].Mark(), key + ".args", e.loc().file + ": " + e.message());
        }
      }
    if (const YAML::Node passes = n["passes"]) readPasses(s, passes, key + ".passes");
    std::string ext = s.tool == "mlcc-codegen" ? ".o" : s.tool == "mlcc-link" ? ".so" : ".ir";
    s.output = s.name + ext;
    if (const YAML::Node out = n["output"]) {
      s.output = expand(scalar(out, key + ".output"), out, key + ".output");
      static const std::regex file_name("[A-Za-z0-9_][A-Za-z0-9_.+-]*");
      if (!std::regex_match(s.output, file_name) || s.output == "build.ninja" || s.output.ends_with(".d"))
        fail(out.Mark(), key + ".output",
             "a file name in the build directory ([A-Za-z0-9_][A-Za-z0-9_.+-]*, not build.ninja nor *.d), "
             "not '" +
                 s.output + "'");
    }
    for (const auto& a : s.args)
      noteFileInput(s, a.substr(a.find('=') == std::string::npos ? 0 : a.find('=') + 1));
    if (s.is_mlcc_tool && options_.check_args)
      checkArguments(s, n["args"] ? n["args"] : n, key + (n["args"] ? ".args" : ""));
    std::sort(s.file_inputs.begin(), s.file_inputs.end());
    s.file_inputs.erase(std::unique(s.file_inputs.begin(), s.file_inputs.end()), s.file_inputs.end());
    return s;
  }

  // An mlcc tool parses the stage's command line (`--check-args`: nothing
  // runs), so an unknown option or a malformed value fails here.
  void checkArguments(const Stage& s, const YAML::Node& at, const std::string& key) const {
    std::vector<std::string> argv = stageCommand(s, "input", "output");
    argv.push_back("--check-args");
    host::ProcessResult r = host::runProcess(argv);
    if (r.exit_code == 0) return;
    std::string msg = r.output;
    while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
    if (size_t nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);  // the error, not the usage
    fail(at.Mark(), key, s.tool + " rejects its arguments: " + msg);
  }

  // An argument or option value naming an existing file (as the stage,
  // which runs in the build directory, sees it) is an input of the stage.
  void noteFileInput(Stage& s, const std::string& value) const {
    if (value.empty() || value.starts_with("-")) return;
    fs::path p = fs::path(resolvePath(build_dir_, value)).lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) s.file_inputs.push_back(p.string());
  }

  void resolveTool(Stage& s, const YAML::Node& n, const std::string& key, bool present,
                   const fs::path& yaml_dir) {
    if (!present)
      fail(n.Mark(), key, "missing: the stage's program (an mlcc tool or the path of an executable)");
    s.tool = expand(scalar(n, key), n, key);
    if (s.tool.find('/') != std::string::npos) {
      fs::path p = fs::path(s.tool).is_absolute() ? fs::path(s.tool) : yaml_dir / s.tool;
      p = p.lexically_normal();
      if (!isExecutableFile(p))
        fail(n.Mark(), key,
             "no executable '" + p.string() + "'" +
                 (pathExists(p) ? " (it is not executable: chmod +x it)" : "") +
                 " (a path is relative to the pipeline file's directory)");
      s.tool_path = p.string();
      return;
    }
    const auto& known = mlccToolNames();
    if (s.tool.starts_with("mlcc-")) {
      if (std::find(known.begin(), known.end(), s.tool) == known.end())
        fail(n.Mark(), key, "unknown tool '" + s.tool + "' (mlcc tools: " + joined(known) + ")");
      s.is_mlcc_tool = true;
      if (!options_.tool_dir.empty() && isExecutableFile(fs::path(options_.tool_dir) / s.tool))
        s.tool_path = (fs::path(options_.tool_dir) / s.tool).lexically_normal().string();
      else
        s.tool_path = findInPath(s.tool);
      if (s.tool_path.empty())
        fail(n.Mark(), key,
             s.tool + " is not built or installed (looked in " + options_.tool_dir + " and PATH)");
      return;
    }
    s.tool_path = findInPath(s.tool);
    if (s.tool_path.empty())
      fail(n.Mark(), key,
           "unknown tool '" + s.tool + "': not an mlcc tool (" + joined(known) +
               ") and no such program in PATH; name a custom stage by its path, e.g. ./" + s.tool);
  }

  // passes: "a,b{k=v}" or a list of "a", "b{k=v}" and {b: {k: v}}.
  void readPasses(Stage& s, const YAML::Node& n, const std::string& key) {
    if (s.is_mlcc_tool && !takesPasses(s.tool))
      fail(n.Mark(), key,
           s.tool + " takes no passes (mlcc-fuse and mlcc-legalize do; use args for its options)");
    std::vector<std::string> items;
    if (n.IsScalar()) {
      items.push_back(expand(n.Scalar(), n, key));
      checkPasses(s, items.back(), n, key);
    } else if (n.IsSequence() && n.size() > 0) {
      for (size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        const std::string ikey = key + "[" + std::to_string(i) + "]";
        std::string text;
        if (item.IsScalar()) {
          text = expand(item.Scalar(), item, ikey);
        } else if (item.IsMap() && item.size() == 1) {
          auto kv = *item.begin();
          text = kv.first.Scalar();
          if (!kv.second.IsNull()) {
            if (!kv.second.IsMap())
              fail(kv.second.Mark(), ikey + "." + text, "the options of a pass are a map OPTION: value");
            std::string opts;
            for (const auto& o : kv.second) {
              const std::string okey = ikey + "." + text + "." + o.first.Scalar();
              if (!o.second.IsScalar()) fail(o.second.Mark(), okey, "an option value is a scalar");
              std::string v = expand(o.second.Scalar(), o.second, okey);
              if (v.find_first_of(",{}") != std::string::npos)
                fail(o.second.Mark(), okey, "an option value cannot contain ',', '{' or '}'");
              opts += (opts.empty() ? "" : ",") + o.first.Scalar() + "=" + v;
            }
            if (!opts.empty()) text += "{" + opts + "}";
          }
        } else {
          fail(item.Mark(), ikey, "a pass is a name, 'name{option=value}', or a map {name: {option: value}}");
        }
        checkPasses(s, text, item, ikey);
        items.push_back(text);
      }
    } else {
      fail(n.Mark(), key, "must be a pass pipeline string or a non-empty list of passes");
    }
    for (const auto& i : items) s.passes += (s.passes.empty() ? "" : ",") + i;
  }

  void checkPasses(Stage& s, const std::string& text, const YAML::Node& at, const std::string& key) const {
    if (!s.is_mlcc_tool) return;  // a custom tool's passes are its own business
    try {
      for (const auto& e : transform::parsePipeline(text, key))
        for (const auto& spec : e.pass->options)
          if (spec.kind == transform::OptionKind::String) noteFileInput(s, e.options.getString(spec.name));
    } catch (const Error& e) {
      const bool one_name = text.find_first_of(",{") == std::string::npos;
      fail(at.Mark(), key, e.message() + (one_name ? "" : " in '" + text + "'"));
    }
  }

  std::string path_;
  const LoadOptions& options_;
  std::string text_;
  std::string build_dir_;  // absolute
  std::map<std::string, std::string> vars_;
  std::map<std::string, std::vector<std::string>> list_vars_;  // list variables, spliced into args
};

}  // namespace

Pipeline loadPipeline(const std::string& yaml_path, const LoadOptions& options) {
  return Loader(yaml_path, options).load();
}

}  // namespace mlcc::pipeline
