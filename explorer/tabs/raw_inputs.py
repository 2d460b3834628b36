"""Input components that hand the callback the value exactly as the caller sent it.

Gradio's own preprocessing answers a wrong value with its internals: "Could not preprocess input component
... TypeError: '<' not supported ...", "Cannot convert float NaN to integer", a pydantic report, a
"<class 'str'>". These subclasses skip it and every callback checks its inputs with explorer.callbacks.validation
instead, so a student (or a script) reads one plain sentence. `is_template` makes the browser draw each one
as the ordinary component it extends.
"""
from pathlib import Path

import gradio as gr
from gradio.components.dataframe import DataframeData
from gradio.data_classes import FileData
from gradio_client import utils as client_utils


class RawSlider(gr.Slider):
    is_template = True

    def preprocess(self, payload):
        return payload


class RawNumber(gr.Number):
    is_template = True

    def preprocess(self, payload):
        return payload


class RawRadio(gr.Radio):
    is_template = True

    def preprocess(self, payload):
        return payload


class RawDropdown(gr.Dropdown):
    is_template = True

    def preprocess(self, payload):
        return payload


class RawTable(gr.Dataframe):
    """A Dataframe whose callback receives the sent {"headers", "data"} dict (or whatever else came)."""

    is_template = True
    data_model = None  # Gradio validates the payload against data_model before preprocess: skip that too

    def preprocess(self, payload):
        return payload

    def api_info(self) -> dict:
        """The schema a normal Dataframe documents, so client.view_api() still shows what to send."""
        schema = DataframeData.model_json_schema()
        schema["additional_description"] = schema.pop("description", None)
        return schema


class RawFile(gr.File):
    """A single-file, filepath File that answers a value which is no uploaded file, or has the wrong
    extension, with a sentence instead of pydantic's report or a Python list of extensions."""

    is_template = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.file_count != "single" or self.type != "filepath":
            raise ValueError("RawFile takes one file, passed as a path")
        self.data_model = None  # checked in preprocess instead, where a bad value gets a readable message

    def preprocess(self, payload):
        if payload is None:
            return None
        try:
            path = FileData.model_validate(payload, context={"validate_meta": True}).path
        except ValueError:  # pydantic's ValidationError
            raise gr.Error("This needs an uploaded file (from a script: gradio_client.handle_file(path)).",
                           print_exception=False) from None
        if self.file_types and not client_utils.is_valid_file(path, self.file_types):
            raise gr.Error(f"{Path(path).name} is not a {' or '.join(self.file_types)} file: upload one of those.",
                           print_exception=False)
        return path  # Gradio's File also leaves an empty temp file behind per call; this does not

    def api_info(self) -> dict:
        """The schema a normal File documents: gradio_client reads it to know this parameter is a file."""
        schema = FileData.model_json_schema()
        schema["additional_description"] = schema.pop("description", None)
        return schema
