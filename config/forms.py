"""Every form of the site drawn one way (templates/forms/): each field in a div.field, its label above,
then the field, its help and its errors. Django's own templates put errors above the field, and the
pages that drew their fields by hand put them below: the site had both."""
from django.forms.renderers import TemplatesSetting


class SiteFormRenderer(TemplatesSetting):
    form_template_name = "forms/div.html"
    field_template_name = "forms/field.html"
